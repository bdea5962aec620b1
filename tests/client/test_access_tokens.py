"""``AccessTokenVerifier``: authgate's access tokens verified at a resource server, over real
HTTP. A real ``authgate serve`` issues real tokens through its code flow (found through its
OpenID Provider metadata, as the verifier finds the keys); a stand-in authorization server on
loopback serves the keys of the tokens the tests sign themselves to break one rule each."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from authgate.client import (
    AccessTokenVerifier,
    InsufficientScope,
    Introspection,
    IntrospectionUnavailable,
    InvalidToken,
    KeySetUnavailable,
    ProtectedResource,
)
from tests.client.resource_support import (
    SECRET,
    Issuer,
    access_token,
    authgate_for,
    basic,
    hmac_signed,
    issuer_of,
    revoke,
    unsigned,
)
from tests.client.support import Authgate, claims_of
from tests.support.ports import free_port

RESOURCE = f"http://127.0.0.1:{free_port()}/api"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Authgate]:
    authgate = authgate_for(tmp_path_factory.mktemp("authgate"), RESOURCE)
    authgate.start()
    try:
        yield authgate
    finally:
        authgate.stop()


@pytest.fixture
async def issuer() -> AsyncIterator[Issuer]:
    stand_in = Issuer()
    await stand_in.start()
    try:
        yield stand_in
    finally:
        await stand_in.stop()


def verifier_of(issuer: str, resource: str = RESOURCE, **kwargs: Any) -> AccessTokenVerifier:
    return AccessTokenVerifier(ProtectedResource(resource, issuer), **kwargs)


async def test_authgates_access_token_verifies(service: Authgate) -> None:
    token = await access_token(service, RESOURCE)
    claims = claims_of(token)
    assert claims["aud"] == RESOURCE  # what this test's registration makes it
    async with verifier_of(issuer_of(service)) as verifier:
        verified = await verifier.verify(token, {"openid", "profile"})
    assert verified.subject == claims["sub"]
    assert verified.client_id == RESOURCE
    assert verified.scopes == {"openid", "profile"}
    assert verified.resource == RESOURCE
    assert int(verified.expires_at.timestamp()) == claims["exp"]
    assert verified.claims == claims
    assert verified.token == token


async def test_a_token_for_another_resource_is_refused(service: Authgate) -> None:
    token = await access_token(service, "other")
    async with verifier_of(issuer_of(service)) as verifier:
        with pytest.raises(InvalidToken) as refused:
            await verifier.verify(token)
    assert refused.value.description == "the access token is not for this resource"


async def test_a_missing_scope_is_insufficient(service: Authgate) -> None:
    token = await access_token(service, RESOURCE, "openid")
    async with verifier_of(issuer_of(service)) as verifier:
        assert (await verifier.verify(token, {"openid"})).scopes == {"openid"}
        with pytest.raises(InsufficientScope) as refused:
            await verifier.verify(token, {"openid", "profile"})
    assert refused.value.required == {"openid", "profile"}


async def test_a_session_token_is_no_access_token(service: Authgate) -> None:
    session = await service.sign_in("ada")
    async with verifier_of(issuer_of(service)) as verifier:
        with pytest.raises(InvalidToken) as refused:
            await verifier.verify(session)
    assert "at+jwt" in refused.value.reason


async def test_introspection_sees_a_revocation_at_once(service: Authgate) -> None:
    token = await access_token(service, RESOURCE)
    introspection = Introspection.for_service(
        service.base, client_id=RESOURCE, client_secret=SECRET, cache_seconds=0
    )
    async with (
        verifier_of(issuer_of(service)) as stateless,
        verifier_of(issuer_of(service), introspection=introspection) as checking,
    ):
        assert (await checking.verify(token)).subject == claims_of(token)["sub"]
        await revoke(service, RESOURCE, token)
        # The signature still verifies: only authgate knows the token was revoked.
        assert (await stateless.verify(token)).subject == claims_of(token)["sub"]
        with pytest.raises(InvalidToken) as refused:
            await checking.verify(token)
        assert refused.value.description == "the access token is not active"
        assert introspection.requests == 2


async def test_introspection_with_credentials_authgate_refuses_is_unavailable(
    service: Authgate,
) -> None:
    token = await access_token(service, RESOURCE)
    introspection = Introspection.for_service(
        service.base, client_id=RESOURCE, client_secret="wrong-" + SECRET
    )
    async with verifier_of(issuer_of(service), introspection=introspection) as verifier:
        with pytest.raises(IntrospectionUnavailable, match="HTTP 401"):
            await verifier.verify(token)


async def test_the_stand_in_issuers_own_tokens_verify(issuer: Issuer) -> None:
    # The baseline of the refusals below: the same tokens, unbroken, are accepted.
    async with verifier_of(issuer.base) as verifier:
        for token in (
            issuer.mint(RESOURCE),
            issuer.mint(RESOURCE, key=issuer.ec),
            issuer.mint(["https://elsewhere.example", RESOURCE]),
            issuer.mint(RESOURCE + "/"),
            issuer.mint(RESOURCE, header={"typ": "application/at+jwt"}),
        ):
            verified = await verifier.verify(token, {"profile"})
            assert (verified.subject, verified.client_id) == ("acc-minted", "some-app")
    assert issuer.requests == ["/.well-known/openid-configuration", "/jwks"]


async def test_the_introspection_answers_active_and_aud_are_checked(issuer: Issuer) -> None:
    introspection = Introspection(
        issuer.base + "/introspect", client_id=RESOURCE, client_secret=SECRET, cache_seconds=0
    )
    token = issuer.mint(RESOURCE)
    async with verifier_of(issuer.base, introspection=introspection) as verifier:
        for answer in (
            {"active": True, "aud": RESOURCE},
            {"active": True, "aud": ["https://other.example/api", RESOURCE]},
        ):
            issuer.introspection_answer = answer
            assert (await verifier.verify(token)).subject == "acc-minted", answer
        # "Not active" last: it is kept until the token would expire (it never comes back).
        for answer, description in (
            ({"active": True, "aud": "https://other.example/api"}, "not for this resource"),
            ({"active": True, "aud": [RESOURCE + "x"]}, "not for this resource"),
            ({"active": False}, "the access token is not active"),
        ):
            issuer.introspection_answer = answer
            with pytest.raises(InvalidToken) as refused:
                await verifier.verify(token)
            assert description in refused.value.description, answer
    assert len(issuer.introspected_by) == 5
    assert set(issuer.introspected_by) == {basic(RESOURCE)["Authorization"]}


def broken_tokens(issuer: Issuer) -> dict[str, tuple[str, str]]:
    """Tokens that break one rule each, and a word of the reason each must be refused for."""
    now = int(time.time())
    other = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})
    public_pem = issuer.rsa.as_pem(private=False)
    return {
        "another resource": (issuer.mint("https://other.example/api"), "audience"),
        "another resource in a list": (issuer.mint(["https://other.example/api"]), "audience"),
        "a prefix of the resource": (issuer.mint(RESOURCE.rsplit("/", 1)[0]), "audience"),
        "no aud": (issuer.mint(None), "audience"),
        "expired": (issuer.mint(RESOURCE, iat=now - 700, exp=now - 600), "expired"),
        "issued in the future": (
            issuer.mint(RESOURCE, iat=now + 600, exp=now + 900),
            "issued in the future",
        ),
        "not yet valid": (issuer.mint(RESOURCE, nbf=now + 600), "not yet valid"),
        "typ JWT": (issuer.mint(RESOURCE, header={"typ": "JWT"}), "typ"),
        "typ application/jwt": (issuer.mint(RESOURCE, header={"typ": "application/jwt"}), "typ"),
        "another issuer": (issuer.mint(RESOURCE, iss="http://127.0.0.1:1"), "'iss'"),
        "alg none": (unsigned(issuer.mint(RESOURCE)), "algorithm 'none'"),
        "HS256 with the public key": (
            hmac_signed(issuer.mint(RESOURCE), public_pem),
            "algorithm 'HS256'",
        ),
        "another key under the same kid": (issuer.mint(RESOURCE, key=other), "signature"),
        "an unknown kid": (issuer.mint(RESOURCE, header={"kid": "nobody"}), "unknown key"),
        "no sub": (issuer.mint(RESOURCE, sub=None), "'sub'"),
        "no client_id": (issuer.mint(RESOURCE, client_id=None), "client_id"),
        "no exp": (issuer.mint(RESOURCE, exp=None), "'exp'"),
        "a scope that is not a string": (issuer.mint(RESOURCE, scope=["profile"]), "scope"),
        "not a JWS": ("not-a-jwt", "compact JWS"),
    }


async def test_broken_tokens_are_refused(issuer: Issuer) -> None:
    async with verifier_of(issuer.base, min_refetch_seconds=0) as verifier:
        for name, (token, reason) in broken_tokens(issuer).items():
            with pytest.raises(InvalidToken) as refused:
                await verifier.verify(token)
                pytest.fail(f"accepted: {name}")
            assert reason in refused.value.reason, (name, refused.value.reason)


async def test_descriptions_say_expired_and_foreign(issuer: Issuer) -> None:
    now = int(time.time())
    async with verifier_of(issuer.base) as verifier:
        with pytest.raises(InvalidToken) as refused:
            await verifier.verify(issuer.mint(RESOURCE, iat=now - 700, exp=now - 600))
        assert refused.value.description == "the access token has expired"
        with pytest.raises(InvalidToken) as refused:
            await verifier.verify(issuer.mint("https://other.example/api"))
        assert refused.value.description == "the access token is not for this resource"


async def test_a_missing_scope_of_a_minted_token(issuer: Issuer) -> None:
    async with verifier_of(issuer.base) as verifier:
        with pytest.raises(InsufficientScope) as refused:
            await verifier.verify(issuer.mint(RESOURCE), {"profile", "orders:write"})
    assert refused.value.required == {"profile", "orders:write"}


async def test_metadata_naming_another_issuer_gives_no_keys(issuer: Issuer) -> None:
    # The stand-in's metadata names its own issuer, not the one configured here.
    resource = ProtectedResource(RESOURCE, "http://127.0.0.1:1")
    async with AccessTokenVerifier(
        resource, discovery_url=issuer.base + "/.well-known/openid-configuration"
    ) as verifier:
        with pytest.raises(KeySetUnavailable, match="issuer"):
            await verifier.verify(issuer.mint(RESOURCE, iss="http://127.0.0.1:1"))


async def test_an_unreachable_issuer_gives_no_keys() -> None:
    async with verifier_of(f"http://127.0.0.1:{free_port()}", timeout_seconds=2) as verifier:
        key = RSAKey.generate_key(2048, parameters={"kid": "k"})
        token = jwt.encode({"alg": "RS256", "kid": "k", "typ": "at+jwt"}, {"aud": RESOURCE}, key)
        with pytest.raises(KeySetUnavailable):
            await verifier.verify(token)


def test_a_resource_identifier_is_an_https_url() -> None:
    for bad in ("api", "http://api.example.com/x", "https://api.example.com/x?y=1", "https://a#f"):
        with pytest.raises(ValueError, match="resource"):
            ProtectedResource(bad, "https://auth.example.com")


def test_the_package_works_without_mcp_fastapi_or_starlette() -> None:
    # They are imported by the functions that use them only: a service without them can use
    # the resource server's verifier and the aiohttp adapter.
    code = (
        "import sys\n"
        "for name in ('mcp', 'fastapi', 'starlette', 'pydantic'):\n"
        "    sys.modules[name] = None\n"
        "import authgate.client, authgate.client.aiohttp, authgate.client.fastapi\n"
        "import authgate.client.mcp\n"
        "r = authgate.client.ProtectedResource('https://api.example/mcp', 'https://auth.example')\n"
        "authgate.client.AccessTokenVerifier(r)\n"
        "try:\n"
        "    authgate.client.mcp.auth_settings(r)\n"
        "except ImportError:\n"
        "    print('mcp needed only here')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "mcp needed only here"
