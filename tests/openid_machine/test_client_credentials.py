"""The ``client_credentials`` grant (RFC 6749 section 4.4) over HTTP: a confidential client's
own access token (RFC 9068: ``sub`` is the client), its scopes from ``allowed_scopes`` less a
person's, introspection and revocation on memory, SQLite and PostgreSQL, userinfo refused, the
per-client rate limit, the configuration's rules."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from joserfc import jwt

from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app.config import ConfigError
from tests.app.conftest import MakeService, load_config
from tests.fakeidp import FakeIdP, SettableClock
from tests.openid.harness import ISSUER, Op
from tests.support.jwt import claims_of, header_of

from .conftest import (
    MCP,
    SIGNER_KEY,
    SSF,
    basic,
    client_token,
    introspect,
    issued,
    machine_config,
    refused,
    token_request,
)

JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


async def test_a_client_gets_a_token_for_itself(machine: Op) -> None:
    body = await issued(await client_token(machine))
    assert set(body) == {"access_token", "token_type", "expires_in", "scope"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == 300
    # without scope: every scope the client is allowed that is not a person's
    assert body["scope"] == "mcp:tools ssf.manage"
    token = body["access_token"]
    assert header_of(token)["typ"] == "at+jwt"
    verified = dict(jwt.decode(token, await machine.keys(), algorithms=["RS256"]).claims)
    now = machine.clock.timestamp()
    assert verified["iss"] == ISSUER
    assert verified["sub"] == verified["client_id"] == verified["aud"] == "robot"
    assert verified["scope"] == "mcp:tools ssf.manage"
    assert now - 5 <= verified["iat"] <= now + 1 and verified["exp"] == verified["iat"] + 300
    assert isinstance(verified["jti"], str) and verified["jti"]
    # no person: no session, no family, no auth_time
    assert not {"sid", "fam", "auth_time"} & set(verified)


async def test_each_token_has_its_own_jti(memory_machine: Op) -> None:
    first = claims_of((await issued(await client_token(memory_machine)))["access_token"])
    second = claims_of((await issued(await client_token(memory_machine)))["access_token"])
    assert first["jti"] != second["jti"]


@pytest.mark.parametrize(
    ("scope", "granted"),
    [("mcp:tools", "mcp:tools"), ("ssf.manage mcp:tools ssf.manage", "ssf.manage mcp:tools")],
)
async def test_the_scope_asked_is_granted_when_allowed(
    memory_machine: Op, scope: str, granted: str
) -> None:
    body = await issued(await client_token(memory_machine, scope=scope))
    assert body["scope"] == granted
    assert claims_of(body["access_token"])["scope"] == granted


@pytest.mark.parametrize("scope", ["openid", "mcp:tools profile", "offline_access", "email"])
async def test_a_persons_scope_is_invalid_scope(memory_machine: Op, scope: str) -> None:
    # "tools" is allowed openid and the rest for the code flow: still not for its own token
    for client_id in ("robot", "tools"):
        body = await refused(
            await client_token(memory_machine, client_id, scope=scope), "invalid_scope"
        )
        assert "person" in body["error_description"]


async def test_a_scope_not_allowed_is_invalid_scope(memory_machine: Op) -> None:
    await refused(await client_token(memory_machine, scope="mcp:admin"), "invalid_scope")
    await refused(await client_token(memory_machine, "tools", scope="ssf.manage"), "invalid_scope")


async def test_a_client_allowed_no_api_scope_gets_a_token_without_scope(memory_machine: Op) -> None:
    """``poster`` keeps the default allowed_scopes, a person's only: its token has none."""
    body = await issued(await client_token(memory_machine, "poster"))
    assert body["scope"] == ""
    claims = claims_of(body["access_token"])
    assert claims["sub"] == claims["aud"] == "poster" and claims["scope"] == ""


async def test_client_secret_post_authenticates(memory_machine: Op) -> None:
    body = await issued(await client_token(memory_machine, "poster"))
    assert claims_of(body["access_token"])["client_id"] == "poster"
    wrong = await memory_machine.client.post(
        "/oauth2/token",
        data={
            "grant_type": "client_credentials",
            "client_id": "poster",
            "client_secret": "wrong" * 10,
        },
    )
    await refused(wrong, "invalid_client", 401)


def signer_assertion(clock: SettableClock, aud: Any = ISSUER) -> str:
    now = int(clock.timestamp())
    claims = {
        "iss": "signer",
        "sub": "signer",
        "aud": aud,
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + 60,
    }
    return jwt.encode(
        {"alg": "ES256", "kid": SIGNER_KEY.kid}, claims, SIGNER_KEY, algorithms=["ES256"]
    )


async def test_private_key_jwt_authenticates(memory_machine: Op) -> None:
    op = memory_machine
    fields = {"grant_type": "client_credentials", "client_assertion_type": JWT_BEARER}
    answer = await op.client.post(
        "/oauth2/token", data={**fields, "client_assertion": signer_assertion(op.clock)}
    )
    body = await issued(answer)
    assert claims_of(body["access_token"])["sub"] == "signer" and body["scope"] == "mcp:tools"
    forged = await op.client.post(
        "/oauth2/token",
        data={**fields, "client_assertion": signer_assertion(op.clock, aud=ISSUER + "/x")},
    )
    await refused(forged, "invalid_client", 401)


async def test_a_client_without_the_grant_is_unauthorized_client(memory_machine: Op) -> None:
    await refused(await client_token(memory_machine, "web"), "unauthorized_client")


async def test_introspection_describes_a_clients_token(machine: Op) -> None:
    body = await issued(await client_token(machine))
    claims = claims_of(body["access_token"])
    described = await introspect(machine, body["access_token"])
    assert described == {
        "active": True,
        "scope": "mcp:tools ssf.manage",
        "client_id": "robot",
        "sub": "robot",
        "aud": "robot",
        "iss": ISSUER,
        "exp": claims["exp"],
        "iat": claims["iat"],
        "jti": claims["jti"],
        "token_type": "access_token",
    }


async def test_revoking_a_clients_token_ends_it_at_once(machine: Op) -> None:
    first = (await issued(await client_token(machine)))["access_token"]
    second = (await issued(await client_token(machine)))["access_token"]
    # another client's revocation changes nothing
    other = await machine.client.post("/oauth2/revoke", data={"token": first}, headers=basic("rs"))
    assert other.status == 200
    assert (await introspect(machine, first))["active"] is True
    revoked = await machine.client.post(
        "/oauth2/revoke", data={"token": first}, headers=basic("robot")
    )
    assert revoked.status == 200
    assert await introspect(machine, first) == {"active": False}
    # its other tokens stay: each is revoked alone
    assert (await introspect(machine, second))["active"] is True
    again = await machine.client.post(
        "/oauth2/revoke", data={"token": first}, headers=basic("robot")
    )
    assert again.status == 200
    assert await introspect(machine, first) == {"active": False}


async def test_a_revoked_token_record_is_purged_once_the_token_expired(machine: Op) -> None:
    token = (await issued(await client_token(machine)))["access_token"]
    jti = claims_of(token)["jti"]
    await machine.client.post("/oauth2/revoke", data={"token": token}, headers=basic("robot"))
    stores = machine.client.app[assembly.RESOURCES].stores
    async with stores.units.read() as tx:
        assert await tx.refresh_tokens.is_token_revoked(jti)
    async with stores.units.begin() as tx:
        await tx.refresh_tokens.purge_expired(machine.clock.now())
    async with stores.units.read() as tx:
        assert await tx.refresh_tokens.is_token_revoked(jti)  # not expired yet: kept
    async with stores.units.begin() as tx:
        assert await tx.refresh_tokens.purge_expired(machine.clock.now().replace(year=2100)) >= 1
    async with stores.units.read() as tx:
        assert not await tx.refresh_tokens.is_token_revoked(jti)


async def test_userinfo_refuses_a_clients_token(memory_machine: Op) -> None:
    token = (await issued(await client_token(memory_machine)))["access_token"]
    answer = await memory_machine.client.get(
        "/oauth2/userinfo", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status == 401, await answer.text()
    assert 'error="invalid_token"' in answer.headers["WWW-Authenticate"]


async def test_the_token_endpoint_limits_each_client(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    config = machine_config(fake_idp, ratelimit={"token": "2/minute"})
    op = Op(await make_service(config, clock=idp_clock), fake_idp, idp_clock)
    for _ in range(2):
        await issued(await client_token(op))
    limited = await client_token(op)
    await refused(limited, "temporarily_unavailable", 429)
    assert int(limited.headers["Retry-After"]) > 0
    # another client has its own budget
    await issued(await client_token(op, "poster"))


async def test_discovery_lists_the_grant(memory_machine: Op) -> None:
    for path in ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"):
        metadata = await (await memory_machine.client.get(path)).json()
        assert "client_credentials" in metadata["grant_types_supported"], metadata


async def test_an_expired_token_is_inactive(memory_machine: Op) -> None:
    token = (await issued(await client_token(memory_machine)))["access_token"]
    memory_machine.clock.advance(301)
    assert await introspect(memory_machine, token) == {"active": False}


def clients_config(tmp_path: Path, **client: Any) -> None:
    base = {"name": "M", "type": "confidential", "secrets": ["s" * 40]}
    load_config(tmp_path, {"rest": {"public_url": ISSUER}, "clients": {"m": {**base, **client}}})


def test_allowed_scopes_take_any_scope_token(tmp_path: Path) -> None:
    clients_config(
        tmp_path, grant_types=["client_credentials"], allowed_scopes=["mcp:tools", "ssf.manage"]
    )
    # the code flow still needs openid
    with pytest.raises(ConfigError, match="openid"):
        clients_config(tmp_path, redirect_uris=["https://m.example.com/cb"], allowed_scopes=["x"])
    for bad in ("two words", 'quote"d', "back\\slash", ""):
        with pytest.raises(ConfigError, match="scope token"):
            clients_config(tmp_path, grant_types=["client_credentials"], allowed_scopes=[bad])


def test_a_public_client_cannot_have_the_grant(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="confidential"):
        load_config(
            tmp_path,
            {
                "rest": {"public_url": ISSUER},
                "clients": {
                    "p": {"name": "P", "type": "public", "grant_types": ["client_credentials"]}
                },
            },
        )


async def test_repeating_a_field_but_resource_is_invalid_request(memory_machine: Op) -> None:
    answer = await token_request(
        memory_machine,
        "robot",
        [("grant_type", "client_credentials"), ("scope", "mcp:tools"), ("scope", "ssf.manage")],
    )
    await refused(answer, "invalid_request")
    answer = await token_request(
        memory_machine,
        "robot",
        [("grant_type", "client_credentials"), ("resource", MCP), ("resource", SSF)],
    )
    await issued(answer)


def test_a_resource_may_not_be_the_session_audience(tmp_path: Path) -> None:
    """An access token for it would carry the audience of authgate's session tokens."""
    client = {
        "name": "M",
        "type": "confidential",
        "secrets": ["s" * 40],
        "grant_types": ["client_credentials"],
        "resources": ["https://sessions.example.com/"],
    }
    settings = {"rest": {"public_url": ISSUER}, "clients": {"m": client}}
    load_config(tmp_path, settings)
    with pytest.raises(ConfigError, match=r"session\.audience"):
        load_config(
            tmp_path, {**settings, "session": {"audience": "https://sessions.example.com/"}}
        )


async def test_a_token_dies_with_its_clients_grant(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, tmp_path: Path
) -> None:
    """The service restarted on the same database and keys, the client no longer registered
    with client_credentials, or no longer registered at all: its tokens are inactive."""
    url = f"sqlite:///{tmp_path / 'authgate.db'}"
    before = Op(
        await make_service(machine_config(fake_idp, url), clock=idp_clock), fake_idp, idp_clock
    )
    robot = (await issued(await client_token(before)))["access_token"]
    poster = (await issued(await client_token(before, "poster")))["access_token"]
    assert (await introspect(before, robot))["active"] is True

    config = machine_config(fake_idp, url)
    clients = dict(config["clients"])
    clients["robot"] = {**clients["robot"], "grant_types": ["authorization_code"]}
    clients["robot"]["redirect_uris"] = ["https://robot.example.com/cb"]
    clients["robot"]["allowed_scopes"] = ["openid", "mcp:tools"]
    del clients["poster"]
    after = Op(
        await make_service({**config, "clients": clients}, clock=idp_clock), fake_idp, idp_clock
    )
    assert await introspect(after, robot) == {"active": False}
    assert await introspect(after, poster) == {"active": False}
