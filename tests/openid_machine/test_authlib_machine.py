"""Interop with an OAuth 2 client no one here wrote: Authlib's ``AsyncOAuth2Client`` (httpx)
fetching ``client_credentials`` tokens from the service over its real socket, authenticating
with ``client_secret_basic``, ``client_secret_post`` and ``private_key_jwt`` (Authlib's
``PrivateKeyJWT``), with RFC 8707's ``resource``; then Authlib's own JOSE checks the token's
signature by the published key set, and introspection and revocation are Authlib's requests
too (on SQLite and PostgreSQL as well as memory). Authlib sends one value per parameter (a
repeated ``resource`` collapses to its last value), so several resources are tested with plain
requests in ``test_resource_indicators``."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from authlib.integrations.base_client import OAuthError
from authlib.oauth2.rfc7523 import PrivateKeyJWT

from tests.openid.harness import ISSUER, Op

from .conftest import MCP, POSTER_SECRET, ROBOT_SECRET, RS_SECRET, SIGNER_KEY, SSF

with warnings.catch_warnings():
    # Authlib announces that authlib.jose gives way to joserfc, and its httpx client a move
    # to httpx2: its JsonWebToken is used here because it is not the implementation that
    # signed the tokens.
    warnings.simplefilter("ignore")
    from authlib.integrations.httpx_client import AsyncOAuth2Client
    from authlib.jose import JsonWebKey, JsonWebToken


@pytest.fixture(autouse=True)
def plain_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test server listens on loopback over http."""
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")


def url(op: Op, path: str) -> str:
    return str(op.client.make_url(path))


async def verified(op: Op, token: str) -> dict[str, Any]:
    """The access token's claims once Authlib's JOSE verified it by the published keys."""
    async with AsyncOAuth2Client() as anonymous:
        answer = await anonymous.request(
            "GET", url(op, "/.well-known/jwks.json"), withhold_token=True
        )
        jwks = answer.json()
    claims = JsonWebToken(["RS256"]).decode(token, JsonWebKey.import_key_set(jwks))
    claims.validate()
    return dict(claims)


async def test_client_secret_basic_with_a_resource(machine: Op) -> None:
    async with AsyncOAuth2Client(
        "robot",
        ROBOT_SECRET,
        token_endpoint_auth_method="client_secret_basic",
        scope="mcp:tools",
    ) as robot:
        token = await robot.fetch_token(
            url(machine, "/oauth2/token"), grant_type="client_credentials", resource=MCP
        )
        assert token["token_type"] == "Bearer" and token["scope"] == "mcp:tools"
        assert "refresh_token" not in token and "id_token" not in token
        claims = await verified(machine, token["access_token"])
        assert claims["iss"] == ISSUER
        assert claims["sub"] == claims["client_id"] == "robot" and claims["aud"] == MCP

    async with AsyncOAuth2Client("rs", RS_SECRET) as rs:
        answer = await rs.introspect_token(
            url(machine, "/oauth2/introspect"), token=token["access_token"], withhold_token=True
        )
        assert answer.status_code == 200
        assert answer.json()["active"] is True and answer.json()["aud"] == MCP
    async with AsyncOAuth2Client("robot", ROBOT_SECRET) as robot:
        answer = await robot.revoke_token(
            url(machine, "/oauth2/revoke"), token=token["access_token"], withhold_token=True
        )
        assert answer.status_code == 200
    async with AsyncOAuth2Client("rs", RS_SECRET) as rs:
        answer = await rs.introspect_token(
            url(machine, "/oauth2/introspect"), token=token["access_token"], withhold_token=True
        )
        assert answer.json() == {"active": False}


async def test_client_secret_post(memory_machine: Op) -> None:
    async with AsyncOAuth2Client(
        "poster", POSTER_SECRET, token_endpoint_auth_method="client_secret_post"
    ) as poster:
        token = await poster.fetch_token(
            url(memory_machine, "/oauth2/token"), grant_type="client_credentials"
        )
    claims = await verified(memory_machine, token["access_token"])
    assert claims["sub"] == "poster" and claims["aud"] == "poster"


async def test_private_key_jwt_with_a_resource(memory_machine: Op) -> None:
    signer = AsyncOAuth2Client(
        "signer",
        SIGNER_KEY,
        token_endpoint_auth_method="private_key_jwt",
    )
    # authgate takes an assertion whose one audience is its issuer (not the token URL)
    signer.register_client_auth_method(PrivateKeyJWT(ISSUER, alg="ES256"))
    try:
        token = await signer.fetch_token(
            url(memory_machine, "/oauth2/token"), grant_type="client_credentials", resource=MCP
        )
        claims = await verified(memory_machine, token["access_token"])
        assert claims["sub"] == "signer" and claims["aud"] == MCP
        # a resource the client is not registered for: Authlib raises the RFC 8707 error
        with pytest.raises(OAuthError) as refused:
            await signer.fetch_token(
                url(memory_machine, "/oauth2/token"),
                grant_type="client_credentials",
                resource=SSF,
            )
        assert refused.value.error == "invalid_target"
    finally:
        await signer.aclose()


async def test_a_persons_scope_is_refused_to_authlib(memory_machine: Op) -> None:
    async with AsyncOAuth2Client("robot", ROBOT_SECRET, scope="openid mcp:tools") as robot:
        with pytest.raises(OAuthError) as refused:
            await robot.fetch_token(
                url(memory_machine, "/oauth2/token"), grant_type="client_credentials"
            )
    assert refused.value.error == "invalid_scope"
