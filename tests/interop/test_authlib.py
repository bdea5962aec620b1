"""Interop with an OAuth 2 client no one here wrote: Authlib's ``AsyncOAuth2Client`` (httpx),
from PyPI, against a real ``authgate serve`` as its OpenID Provider, on SQLite and PostgreSQL.

Authlib reads the discovery document, builds the authorization request (PKCE S256 from its own
verifier, state, nonce), redeems the code with ``client_secret_basic``, and the ID token is
checked with Authlib's own JOSE implementation (``JsonWebToken`` with ``CodeIDToken``: the
signature by the published key set, ``iss``, ``aud``, ``exp``, ``iat``, ``nonce`` and
``at_hash``); then userinfo, refresh with rotation (the replaced token refused, its family
ended), introspection, revocation, and a second application authenticating with
``private_key_jwt`` (Authlib's ``PrivateKeyJWT``) by a key registered inline (``jwks``).
The test plays only the browser.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from authlib.common.security import generate_token
from authlib.integrations.base_client import OAuthError
from authlib.oauth2.rfc7523 import PrivateKeyJWT
from authlib.oidc.core import CodeIDToken
from joserfc.errors import InvalidClaimError as OidcClaimError
from joserfc.jwk import RSAKey

from tests.interop.provider_face import (
    AUTHLIB_CLIENT,
    AUTHLIB_SECRET,
    ES256_CLIENT,
    ES256_SECRET,
    JWT_CLIENT,
    JWT_KEY,
    JWT_KID,
    PERSON,
    POST_CLIENT,
    POST_NAME,
    POST_SECRET,
    PUBLIC_CLIENT,
    REDIRECT_URI,
    Back,
    Provider,
)
from tests.interop.support import Browser, query_of

with warnings.catch_warnings():
    # Authlib 1.9 announces that authlib.jose will give way to joserfc (authgate's own JOSE
    # library): its JsonWebToken is used here because it is an implementation other than the
    # one that signed the tokens.
    # Likewise its httpx client announces a move to httpx2; httpx is what is installed.
    warnings.simplefilter("ignore")
    from authlib.integrations.httpx_client import AsyncOAuth2Client
    from authlib.jose import JsonWebKey, JsonWebToken
    from authlib.jose.errors import InvalidClaimError, UnsupportedAlgorithmError

SCOPES = "openid email profile offline_access"
# Authlib's OpenID claims (nonce, at_hash) raise joserfc's error, its JWT claims authlib.jose's
REFUSED_CLAIM = (InvalidClaimError, OidcClaimError)


async def discovery(provider: Provider) -> dict[str, Any]:
    async with AsyncOAuth2Client() as anonymous:
        answer = await anonymous.request(
            "GET", f"{provider.issuer}/.well-known/openid-configuration", withhold_token=True
        )
    assert answer.status_code == 200, answer.text
    metadata: dict[str, Any] = answer.json()
    assert metadata["issuer"] == provider.issuer
    assert "S256" in metadata["code_challenge_methods_supported"]
    return metadata


async def code_flow(
    provider: Provider, browser: Browser, client: AsyncOAuth2Client, metadata: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """An authorization as Authlib builds it, the browser through it, the code redeemed: the
    token response and the nonce sent."""
    verifier = generate_token(48)
    nonce = generate_token(20)
    url, state = client.create_authorization_url(
        metadata["authorization_endpoint"], code_verifier=verifier, nonce=nonce
    )
    sent = query_of(url)
    assert sent["code_challenge_method"] == "S256" and sent["code_challenge"] != verifier
    back = await provider.authorize(browser, url)
    returned = query_of(back)
    assert returned["state"] == state and returned["iss"] == provider.issuer, returned
    token = await client.fetch_token(
        metadata["token_endpoint"], authorization_response=back, code_verifier=verifier
    )
    return dict(token), nonce


async def id_token_claims(
    client: AsyncOAuth2Client,
    metadata: dict[str, Any],
    token: dict[str, Any],
    *,
    client_id: str,
    nonce: str,
    algorithms: tuple[str, ...] = ("RS256",),
) -> dict[str, Any]:
    """The ID token as Authlib validates it against the published key set (signed with one
    of ``algorithms``)."""
    published = await client.request("GET", metadata["jwks_uri"], withhold_token=True)
    keys = JsonWebKey.import_key_set(published.json())
    claims = JsonWebToken(list(algorithms)).decode(
        token["id_token"],
        keys,
        claims_cls=CodeIDToken,
        claims_options={
            "iss": {"essential": True, "value": metadata["issuer"]},
            "aud": {"essential": True, "value": client_id},
        },
        claims_params={"nonce": nonce, "access_token": token["access_token"]},
    )
    claims.validate(leeway=5)
    return dict(claims)


def refused(error: OAuthError) -> str:
    return str(error.error)


async def rotation(
    client: AsyncOAuth2Client, metadata: dict[str, Any], refresh_token: str
) -> dict[str, Any]:
    """The token response to a refresh with ``refresh_token``, which rotates: a new refresh
    token comes back."""
    rotated = dict(
        await client.refresh_token(metadata["token_endpoint"], refresh_token=refresh_token)
    )
    assert rotated["refresh_token"] != refresh_token
    return rotated


async def introspection(
    client: AsyncOAuth2Client, metadata: dict[str, Any], token: str
) -> dict[str, Any]:
    """What the introspection endpoint answers ``client`` (200) of ``token``."""
    answer = await client.introspect_token(metadata["introspection_endpoint"], token=token)
    assert answer.status_code == 200, answer.text
    said: dict[str, Any] = answer.json()
    return said


async def test_authlib_through_every_endpoint(
    authgate_provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Authlib refuses plain-HTTP endpoints unless told that this is a test on loopback
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    provider = authgate_provider
    metadata = await discovery(provider)
    browser = provider.browser()
    client = AsyncOAuth2Client(
        AUTHLIB_CLIENT,
        AUTHLIB_SECRET,
        scope=SCOPES,
        redirect_uri=REDIRECT_URI,
        code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_basic",
    )
    try:
        token, nonce = await code_flow(provider, browser, client, metadata)
        assert token["token_type"].lower() == "bearer" and token["refresh_token"]
        claims = await id_token_claims(
            client, metadata, token, client_id=AUTHLIB_CLIENT, nonce=nonce
        )
        assert claims["sub"] and claims["sid"]
        # the same checks refuse a token minted for another request
        with pytest.raises(REFUSED_CLAIM):
            await id_token_claims(
                client, metadata, token, client_id=AUTHLIB_CLIENT, nonce="another nonce"
            )
        with pytest.raises(REFUSED_CLAIM):
            await id_token_claims(client, metadata, token, client_id="another-app", nonce=nonce)

        userinfo = await client.get(metadata["userinfo_endpoint"])
        assert userinfo.status_code == 200, userinfo.text
        assert userinfo.json()["sub"] == claims["sub"]
        assert userinfo.json()["email"] == PERSON.email

        # refresh with rotation; the replaced token refused, and its family with it
        first_refresh = token["refresh_token"]
        rotated = await rotation(client, metadata, first_refresh)
        assert rotated["access_token"] != token["access_token"]
        active = await introspection(client, metadata, rotated["access_token"])
        assert active["active"] is True and active["client_id"] == AUTHLIB_CLIENT, active
        assert active["sub"] == claims["sub"], active
        with pytest.raises(OAuthError) as reused:
            await client.refresh_token(metadata["token_endpoint"], refresh_token=first_refresh)
        assert refused(reused.value) == "invalid_grant"
        after_reuse = await client.introspect_token(
            metadata["introspection_endpoint"], token=rotated["access_token"]
        )
        assert after_reuse.json() == {"active": False}
        with pytest.raises(OAuthError) as family_ended:
            await client.refresh_token(
                metadata["token_endpoint"], refresh_token=rotated["refresh_token"]
            )
        assert refused(family_ended.value) == "invalid_grant"

        # a second authorization (single sign-on), then its refresh token revoked
        again, _ = await code_flow(provider, browser, client, metadata)
        revoked = await client.revoke_token(
            metadata["revocation_endpoint"],
            token=again["refresh_token"],
            token_type_hint="refresh_token",
        )
        assert revoked.status_code == 200, revoked.text
        gone = await client.introspect_token(
            metadata["introspection_endpoint"], token=again["access_token"]
        )
        assert gone.json() == {"active": False}
        after = await client.get(metadata["userinfo_endpoint"])  # the client's current token
        assert after.status_code == 401, after.text
    finally:
        await client.aclose()

    # an application authenticating with private_key_jwt, its key registered inline; the same
    # browser signs in by single sign-on
    jwt_client = AsyncOAuth2Client(
        JWT_CLIENT,
        JWT_KEY,
        scope=SCOPES,
        redirect_uri=REDIRECT_URI,
        code_challenge_method="S256",
        token_endpoint_auth_method="private_key_jwt",
    )
    # Authlib signs for the URL it is given: authgate takes an assertion whose one audience is
    # its issuer (the 2025 advisory on private_key_jwt audiences), so it is given the issuer.
    jwt_client.register_client_auth_method(PrivateKeyJWT(metadata["issuer"]))
    try:
        token, nonce = await code_flow(provider, browser, jwt_client, metadata)
        jwt_claims = await id_token_claims(
            jwt_client, metadata, token, client_id=JWT_CLIENT, nonce=nonce
        )
        assert jwt_claims["sub"] == claims["sub"]
        rotated = await rotation(jwt_client, metadata, token["refresh_token"])
        introspected = await introspection(jwt_client, metadata, rotated["access_token"])
        assert introspected["active"] is True
        assert introspected["client_id"] == JWT_CLIENT
    finally:
        await jwt_client.aclose()
        await browser.close()

    # the same application's name with a key it never registered is refused
    impostor = AsyncOAuth2Client(
        JWT_CLIENT,
        RSAKey.generate_key(2048, parameters={"kid": JWT_KID}),
        token_endpoint_auth_method="private_key_jwt",
    )
    impostor.register_client_auth_method(PrivateKeyJWT(metadata["issuer"]))
    try:
        with pytest.raises(OAuthError) as unknown_key:
            await impostor.refresh_token(
                metadata["token_endpoint"], refresh_token=rotated["refresh_token"]
            )
        assert refused(unknown_key.value) == "invalid_client"
        still = await jwt_client_check(metadata, rotated["access_token"])
        assert still is True
    finally:
        await impostor.aclose()

    # the right key, but Authlib's default audience (the token endpoint's URL) is refused
    endpoint_audience = AsyncOAuth2Client(
        JWT_CLIENT, JWT_KEY, token_endpoint_auth_method="private_key_jwt"
    )
    endpoint_audience.register_client_auth_method(PrivateKeyJWT(metadata["token_endpoint"]))
    try:
        with pytest.raises(OAuthError) as endpoint_aud:
            await endpoint_audience.refresh_token(
                metadata["token_endpoint"], refresh_token=rotated["refresh_token"]
            )
        assert refused(endpoint_aud.value) == "invalid_client"
        assert await jwt_client_check(metadata, rotated["access_token"]) is True
    finally:
        await endpoint_audience.aclose()

    # revoking by the access token (RFC 7009 lets a client present either) ends the grant's
    # family too, the client authenticating with private_key_jwt at the revocation endpoint
    revoker = AsyncOAuth2Client(
        JWT_CLIENT,
        JWT_KEY,
        token_endpoint_auth_method="private_key_jwt",
        # Authlib's revocation default is client_secret_basic whenever a "secret" is given
        revocation_endpoint_auth_method="private_key_jwt",
    )
    revoker.register_client_auth_method(PrivateKeyJWT(metadata["issuer"]))
    try:
        answer = await revoker.revoke_token(
            metadata["revocation_endpoint"],
            token=rotated["access_token"],
            token_type_hint="access_token",
        )
        assert answer.status_code == 200, answer.text
        assert await jwt_client_check(metadata, rotated["access_token"]) is False
        with pytest.raises(OAuthError) as after_revocation:
            await revoker.refresh_token(
                metadata["token_endpoint"], refresh_token=rotated["refresh_token"]
            )
        assert refused(after_revocation.value) == "invalid_grant"
    finally:
        await revoker.aclose()


async def jwt_client_check(metadata: dict[str, Any], access_token: str) -> bool:
    """Whether ``access_token`` is still active, asked by the private_key_jwt application."""
    checker = AsyncOAuth2Client(JWT_CLIENT, JWT_KEY, token_endpoint_auth_method="private_key_jwt")
    checker.register_client_auth_method(PrivateKeyJWT(metadata["issuer"]))
    try:
        return bool((await introspection(checker, metadata, access_token))["active"])
    finally:
        await checker.aclose()


async def authorization(
    provider: Provider,
    browser: Browser,
    client: AsyncOAuth2Client,
    metadata: dict[str, Any],
    **extra: str,
) -> tuple[dict[str, Any], str, Back]:
    """An authorization as Authlib builds it (``extra`` parameters added), the browser
    through it, whatever pages it meets, the answer checked (state, RFC 9207 ``iss``) and
    the code redeemed: the token response, the nonce sent and what the browser brought back."""
    verifier = generate_token(48)
    nonce = generate_token(20)
    url, state = client.create_authorization_url(
        metadata["authorization_endpoint"], code_verifier=verifier, nonce=nonce, **extra
    )
    back = await provider.through(browser, url)
    returned = back.form if back.form is not None else query_of(back.url)
    assert returned["state"] == state and returned["iss"] == provider.issuer, returned
    if back.form is not None:  # form_post: the application reads the posted form
        token = await client.fetch_token(
            metadata["token_endpoint"], code=returned["code"], code_verifier=verifier
        )
    else:
        token = await client.fetch_token(
            metadata["token_endpoint"], authorization_response=back.url, code_verifier=verifier
        )
    return dict(token), nonce, back


async def test_authlib_with_client_secret_post_a_consent_page_and_a_public_client(
    authgate_provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A third-party application authenticating with ``client_secret_post``: the person
    signs in and approves the consent page (the browser posts its form), Authlib finishes;
    then a public application (no secret, PKCE alone) of the same person, refresh included."""
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    provider = authgate_provider
    metadata = await discovery(provider)
    assert "client_secret_post" in metadata["token_endpoint_auth_methods_supported"]
    assert "none" in metadata["token_endpoint_auth_methods_supported"]
    browser = provider.browser()
    third_party = AsyncOAuth2Client(
        POST_CLIENT,
        POST_SECRET,
        scope=SCOPES,
        redirect_uri=REDIRECT_URI,
        code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_post",
        revocation_endpoint_auth_method="client_secret_post",
    )
    public = AsyncOAuth2Client(
        PUBLIC_CLIENT,
        scope=SCOPES,
        redirect_uri=REDIRECT_URI,
        code_challenge_method="S256",
        token_endpoint_auth_method="none",
    )
    try:
        token, nonce, back = await authorization(provider, browser, third_party, metadata)
        assert back.pages == ("sign-in", "consent")
        assert POST_NAME in provider.consent_pages[-1]
        claims = await id_token_claims(
            third_party, metadata, token, client_id=POST_CLIENT, nonce=nonce
        )
        assert token["refresh_token"] and set(token["scope"].split()) == set(SCOPES.split())
        userinfo = await third_party.get(metadata["userinfo_endpoint"])
        assert userinfo.status_code == 200 and userinfo.json()["email"] == PERSON.email
        rotated = await rotation(third_party, metadata, token["refresh_token"])
        introspected = await introspection(third_party, metadata, rotated["access_token"])
        assert introspected["active"] is True
        assert introspected["client_id"] == POST_CLIENT
        # consent is asked once per account, client and scope set: not again
        again, _, back = await authorization(provider, browser, third_party, metadata)
        assert back.pages == ()
        revoked = await third_party.revoke_token(
            metadata["revocation_endpoint"], token=again["refresh_token"]
        )
        assert revoked.status_code == 200, revoked.text
        with pytest.raises(OAuthError) as after:
            await third_party.refresh_token(
                metadata["token_endpoint"], refresh_token=again["refresh_token"]
            )
        assert refused(after.value) == "invalid_grant"

        # the public application: single sign-on, a first party (no page), no secret at all
        token, nonce, back = await authorization(provider, browser, public, metadata)
        assert back.pages == ()
        public_claims = await id_token_claims(
            public, metadata, token, client_id=PUBLIC_CLIENT, nonce=nonce
        )
        assert public_claims["sub"] == claims["sub"]
        rotated = await rotation(public, metadata, token["refresh_token"])
        userinfo = await public.get(metadata["userinfo_endpoint"])
        assert userinfo.status_code == 200 and userinfo.json()["sub"] == claims["sub"]
        with pytest.raises(OAuthError) as reused:
            await public.refresh_token(
                metadata["token_endpoint"], refresh_token=token["refresh_token"]
            )
        assert refused(reused.value) == "invalid_grant"
        # a public client revokes by its client_id alone (RFC 7009 section 2.1)
        fresh, _, _ = await authorization(provider, browser, public, metadata)
        revoked = await public.revoke_token(
            metadata["revocation_endpoint"], token=fresh["refresh_token"]
        )
        assert revoked.status_code == 200, revoked.text
        with pytest.raises(OAuthError) as after_revocation:
            await public.refresh_token(
                metadata["token_endpoint"], refresh_token=fresh["refresh_token"]
            )
        assert refused(after_revocation.value) == "invalid_grant"
    finally:
        await third_party.aclose()
        await public.aclose()
        await browser.close()


async def test_authlib_with_form_post_and_an_es256_client(
    authgate_provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``response_mode=form_post``: the browser posts authgate's form to the application,
    which hands the code to Authlib; and an application registered with
    ``id_token_signed_response_alg: ES256``, whose ID token Authlib verifies by the key set
    discovery names."""
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    provider = authgate_provider
    metadata = await discovery(provider)
    assert "form_post" in metadata["response_modes_supported"]
    assert "ES256" in metadata["id_token_signing_alg_values_supported"]
    browser = provider.browser()
    posted = AsyncOAuth2Client(
        AUTHLIB_CLIENT,
        AUTHLIB_SECRET,
        scope=SCOPES,
        redirect_uri=REDIRECT_URI,
        code_challenge_method="S256",
    )
    es256 = AsyncOAuth2Client(
        ES256_CLIENT,
        ES256_SECRET,
        scope="openid email",
        redirect_uri=REDIRECT_URI,
        code_challenge_method="S256",
    )
    try:
        token, nonce, back = await authorization(
            provider, browser, posted, metadata, response_mode="form_post"
        )
        assert back.form is not None and back.url == REDIRECT_URI
        assert set(back.form) == {"code", "state", "iss"}, back.form
        claims = await id_token_claims(
            posted, metadata, token, client_id=AUTHLIB_CLIENT, nonce=nonce
        )
        # single sign-on, answered as a form too
        again, _, back = await authorization(
            provider, browser, posted, metadata, response_mode="form_post"
        )
        assert back.form is not None and back.pages == ()
        assert again["access_token"] != token["access_token"]

        token, nonce, back = await authorization(provider, browser, es256, metadata)
        assert back.form is None
        header = (
            JsonWebToken(["ES256"])
            .decode(
                token["id_token"],
                JsonWebKey.import_key_set((await es256.get(metadata["jwks_uri"])).json()),
            )
            .header
        )
        assert header["alg"] == "ES256" and header["kid"]
        es_claims = await id_token_claims(
            es256, metadata, token, client_id=ES256_CLIENT, nonce=nonce, algorithms=("ES256",)
        )
        assert es_claims["sub"] == claims["sub"]
        # an application expecting RS256 would refuse it: the algorithm is the registered one
        with pytest.raises(UnsupportedAlgorithmError):
            await id_token_claims(es256, metadata, token, client_id=ES256_CLIENT, nonce=nonce)
    finally:
        await posted.aclose()
        await es256.aclose()
        await browser.close()
