"""Each provider shape end to end against the fake over real HTTP:
authorization URL → the fake's authorize → exchange → VerifiedIdentity."""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey

from authgate.adapters.provider import OAuthIdentityProvider
from authgate.domain.model import ProviderIdentity
from authgate.ports.provider import ExchangeFailed, IdentityProvider, VerificationFailed
from tests.fakeidp import FakeIdP, FakeUser, SettableClock, appsecret_proof
from tests.identity.conftest import MakeAdapter, sign_in, start


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


# -- google-like: OIDC with discovery ------------------------------------------------------------


async def test_google_sign_in_end_to_end(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    adapter = make_adapter("google")
    user = FakeUser(sub="g-123", email="gina@example.com", email_verified=True, name="Gina G")

    verified = await sign_in(adapter, fake_idp, as_user=user)

    assert verified.identity == ProviderIdentity("google", "g-123")
    assert verified.email == "gina@example.com"
    assert verified.email_verified is True
    assert verified.name == "Gina G"
    assert "nonce" not in verified.profile and "aud" not in verified.profile
    assert fake_idp.google.hits["openid-configuration"] == 1


async def test_the_adapter_satisfies_the_port(make_adapter: MakeAdapter) -> None:
    adapter: IdentityProvider = make_adapter("google")
    assert adapter.name == "google"
    assert adapter.client_id == "google-client-id"
    assert adapter.scopes == ("openid", "profile", "email")
    assert adapter.uses_nonce and adapter.uses_pkce


async def test_authorization_url_carries_the_spec_parameters(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    adapter = make_adapter("google")
    url = await adapter.authorization_url(
        state="the state/with+odd chars",
        redirect_uri="http://127.0.0.1:8080/v1/auth/google/callback",
        code_challenge="challenge-value",
        nonce="nonce-value",
    )
    assert url.startswith(fake_idp.google.authorization_endpoint + "?")
    assert "scope=openid%20profile%20email" in url  # space-separated, percent-encoded
    assert "+" not in urlsplit(url).query
    q = query_of(url)
    assert q == {
        "client_id": ["google-client-id"],
        "redirect_uri": ["http://127.0.0.1:8080/v1/auth/google/callback"],
        "response_type": ["code"],
        "scope": ["openid profile email"],
        "state": ["the state/with+odd chars"],
        "code_challenge": ["challenge-value"],
        "code_challenge_method": ["S256"],
        "nonce": ["nonce-value"],
        # OIDC Core 3.1.2.1: with max_age, the ID token must state auth_time (a year: it
        # never makes the provider ask for a login it would not have asked for).
        "max_age": ["31536000"],
    }
    assert "secret" not in url


async def test_authorization_url_keeps_the_endpoints_own_query(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    adapter = make_adapter(
        "facebook",
        authorization_endpoint=fake_idp.facebook.authorization_endpoint + "?display=popup",
    )
    url = await adapter.authorization_url(
        state="s", redirect_uri="http://127.0.0.1/cb", code_challenge=None, nonce=None
    )
    q = query_of(url)
    assert q["display"] == ["popup"]
    assert q["scope"] == ["public_profile email"]
    assert "nonce" not in q and "code_challenge" not in q and "response_mode" not in q


async def test_explicit_endpoints_skip_discovery(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    g = fake_idp.google
    adapter = make_adapter(
        "google",
        authorization_endpoint=g.authorization_endpoint,
        token_endpoint=g.token_endpoint,
        jwks_uri=g.jwks_uri,
    )
    verified = await sign_in(adapter, fake_idp)
    assert verified.identity.subject == g.next_user.sub
    assert g.hits["openid-configuration"] == 0


async def test_client_secret_post_puts_the_secret_in_the_body_only(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    await sign_in(make_adapter("google"), fake_idp)
    (request,) = fake_idp.google.requests_to("token")
    assert request.query == {}
    assert request.form["client_secret"] == fake_idp.google.client_secret
    assert request.form["client_id"] == "google-client-id"
    assert request.form["grant_type"] == "authorization_code"
    assert request.form["redirect_uri"].endswith("/v1/auth/google/callback?x=1")
    assert "code_verifier" in request.form
    assert "Authorization" not in request.headers


async def test_client_secret_basic(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    fake_idp.google.token_endpoint_auth = "client_secret_basic"
    verified = await sign_in(
        make_adapter("google", token_endpoint_auth="client_secret_basic"), fake_idp
    )
    assert verified.identity.provider == "google"
    (request,) = fake_idp.google.requests_to("token")
    assert "client_secret" not in request.form
    scheme, _, value = request.headers["Authorization"].partition(" ")
    assert scheme == "Basic"
    assert base64.b64decode(value).decode().startswith("google-client-id:")


async def test_userinfo_supplies_the_email_when_the_id_token_lacks_it(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.google.claim_overrides = {"email": None, "email_verified": None}
    verified = await sign_in(make_adapter("google"), fake_idp)
    assert verified.email == fake_idp.google.next_user.email
    assert verified.email_verified is True
    assert fake_idp.google.hits["userinfo"] == 1


async def test_userinfo_for_another_subject_is_rejected(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.google.claim_overrides = {"email": None, "sub": "someone-else"}
    with pytest.raises(VerificationFailed, match="userinfo sub"):
        await sign_in(make_adapter("google"), fake_idp)


async def test_userinfo_down_leaves_the_email_empty(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.google.claim_overrides = {"email": None}
    fake_idp.google.userinfo_down = True
    verified = await sign_in(make_adapter("google"), fake_idp)
    assert verified.email is None and verified.email_verified is None


@pytest.mark.parametrize(("claimed", "parsed"), [(False, False), ("false", False), ("true", True)])
async def test_email_verified_is_parsed(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, claimed: object, parsed: bool
) -> None:
    fake_idp.google.claim_overrides = {"email_verified": claimed}
    verified = await sign_in(make_adapter("google"), fake_idp)
    assert verified.email_verified is parsed


async def test_malformed_email_verified_fails_verification(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.google.claim_overrides = {"email_verified": "yes"}
    with pytest.raises(VerificationFailed, match="email_verified"):
        await sign_in(make_adapter("google"), fake_idp)


# -- facebook-like: OAuth 2.0, profile request with appsecret_proof ------------------------------


async def test_facebook_sign_in_end_to_end(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    adapter = make_adapter("facebook")
    assert not adapter.uses_nonce
    user = FakeUser(sub="fb-42", email="fred@example.com", email_verified=True, name="Fred F")

    verified = await sign_in(adapter, fake_idp, as_user=user)

    assert verified.identity == ProviderIdentity("facebook", "fb-42")
    assert verified.email == "fred@example.com"
    assert verified.email_verified is None  # a profile answer never vouches for the address
    assert verified.name == "Fred F"


async def test_facebook_profile_request_carries_appsecret_proof_and_bearer(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fb = fake_idp.facebook
    await sign_in(make_adapter("facebook"), fake_idp)
    (token_request,) = fb.requests_to("token")
    assert token_request.form["client_secret"] == fb.client_secret
    (profile,) = fb.requests_to("me")
    assert profile.query["fields"] == "id,name,email"
    assert "access_token" not in profile.query
    scheme, _, token = profile.headers["Authorization"].partition(" ")
    assert scheme == "Bearer"
    assert profile.query["appsecret_proof"] == appsecret_proof(fb.client_secret, token)


async def test_facebook_profile_refused_for_a_wrong_appsecret_proof(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.facebook.proof_secret = "the-secret-the-provider-really-holds"
    with pytest.raises(ExchangeFailed, match="profile endpoint answered HTTP 400"):
        await sign_in(make_adapter("facebook"), fake_idp)


async def test_fake_profile_endpoint_checks_appsecret_proof(
    fake_idp: FakeIdP, http_session: aiohttp.ClientSession
) -> None:
    fb = fake_idp.facebook
    token = fb.new_access_token(FakeUser(sub="9"))
    url = fb.profile_endpoint
    headers = {"Authorization": f"Bearer {token}"}
    async with http_session.get(url, headers=headers) as response:
        assert response.status == 400  # no proof
    proof = appsecret_proof(fb.client_secret, token)
    async with http_session.get(url + f"&appsecret_proof={proof}", headers=headers) as response:
        assert response.status == 200
        assert (await response.json())["id"] == "9"
    async with http_session.get(url + f"&appsecret_proof={proof}") as response:
        assert response.status == 401  # no token


async def test_facebook_profile_refusal_is_an_exchange_failure(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.facebook.profile_down = True
    with pytest.raises(ExchangeFailed, match="profile endpoint answered HTTP 500"):
        await sign_in(make_adapter("facebook"), fake_idp)


async def test_facebook_profile_without_email(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    verified = await sign_in(
        make_adapter("facebook"), fake_idp, as_user=FakeUser(sub="7", email=None, name=None)
    )
    assert verified.identity.subject == "7"
    assert verified.email is None and verified.name is None


# -- apple-like: ES256 client-secret JWT, form_post, string email_verified, user JSON -----------


async def test_apple_sign_in_end_to_end(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    adapter = make_adapter("apple")
    user = FakeUser(sub="001234.abcd", email="ann@privaterelay.example", name="Ann Apple")

    started = await start(adapter, fake_idp, user=user)

    assert query_of(started.url)["response_mode"] == ["form_post"]
    assert query_of(started.url)["scope"] == ["name email"]
    assert started.callback.method == "POST"
    assert started.callback.url == started.redirect_uri
    assert started.callback.user is not None
    verified = await adapter.exchange(
        code=started.callback.code or "",
        redirect_uri=started.redirect_uri,
        code_verifier=started.verifier,
        nonce=started.nonce,
        user=started.callback.user,
    )
    assert verified.identity == ProviderIdentity("apple", "001234.abcd")
    assert verified.email == "ann@privaterelay.example"
    assert verified.email_verified is True  # from the string "true"
    assert verified.name == "Ann Apple"  # from the first-time user JSON


async def test_apple_second_sign_in_has_no_user_json_and_no_name(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    adapter = make_adapter("apple")
    await sign_in(adapter, fake_idp)
    started = await start(adapter, fake_idp)
    assert started.callback.user is None
    verified = await adapter.exchange(
        code=started.callback.code or "",
        redirect_uri=started.redirect_uri,
        code_verifier=started.verifier,
        nonce=started.nonce,
    )
    assert verified.name is None


@pytest.mark.parametrize("user_json", ["not json", "[]", '{"name": "flat"}', '{"name": {}}'])
async def test_apple_malformed_user_json_is_ignored(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, user_json: str
) -> None:
    verified = await sign_in(make_adapter("apple"), fake_idp, user=user_json)
    assert verified.name is None
    assert verified.identity.provider == "apple"


async def test_apple_user_json_is_not_used_by_other_providers(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.google.claim_overrides = {"name": None}
    user_json = json.dumps({"name": {"firstName": "Mallory", "lastName": "M"}})
    verified = await sign_in(make_adapter("google"), fake_idp, user=user_json)
    assert verified.name is None


async def test_apple_client_secret_is_an_es256_jwt_verified_by_the_fake(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    apple = fake_idp.apple
    await sign_in(make_adapter("apple"), fake_idp)
    (claims,) = apple.client_secret_claims
    assert claims["header"] == {"alg": "ES256", "kid": apple.key_id}
    assert claims["iss"] == apple.team_id
    assert claims["sub"] == apple.client_id
    assert claims["aud"] == apple.issuer
    assert 0 < claims["exp"] - claims["iat"] <= 300
    (request,) = apple.requests_to("token")
    secret = request.form["client_secret"]
    assert apple.apple_client_key is not None
    public = ECKey.import_key(apple.apple_client_key.as_dict(private=False))
    assert jwt.decode(secret, public, algorithms=["ES256"]).claims["sub"] == apple.client_id


async def test_apple_client_secret_is_reused_until_near_expiry(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("apple")
    await sign_in(adapter, fake_idp)
    await sign_in(adapter, fake_idp)
    idp_clock.advance(250)  # within a minute of the 5-minute expiry: minted again
    await sign_in(adapter, fake_idp)
    secrets_sent = [r.form["client_secret"] for r in fake_idp.apple.requests_to("token")]
    assert secrets_sent[0] == secrets_sent[1] != secrets_sent[2]


async def test_apple_client_secret_signed_by_another_key_is_refused(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    other = ECKey.generate_key("P-256", private=True).as_pem(private=True).decode()
    adapter = make_adapter("apple", private_key_pem=other)
    with pytest.raises(ExchangeFailed, match=r"HTTP 401 \(error=invalid_client\)"):
        await sign_in(adapter, fake_idp)


async def test_apple_adapter_type(make_adapter: MakeAdapter) -> None:
    adapter = make_adapter("apple")
    assert isinstance(adapter, OAuthIdentityProvider)
    assert adapter.uses_nonce


async def test_fake_config_is_a_valid_providers_section(fake_idp: FakeIdP) -> None:
    """``fake.config(name)`` is what the service's YAML ``providers`` section takes."""
    from authgate.entrypoints.app.config import parse

    providers = {name: fake_idp.config(name) for name in ("google", "facebook", "apple")}
    text = json.dumps(
        {
            "rest": {"port": 8080},
            "otel": {"service": {"name": "t"}, "sdk": {"disabled": True}},
            "providers": providers,
        }
    )
    config = parse(text)  # JSON is YAML
    assert list(config.providers) == ["google", "facebook", "apple"]
    apple = config.providers["apple"]
    assert apple.private_key_file is not None
    assert apple.private_key_file == providers["apple"]["private_key_file"]
    assert "PRIVATE KEY" in (fake_idp.settings("apple").private_key_pem or "")  # read from it


async def test_callback_path_qs(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    started = await start(make_adapter("google"), fake_idp)
    assert started.callback.method == "GET"
    assert started.callback.path_qs.startswith("/v1/auth/google/callback?x=1&code=")
