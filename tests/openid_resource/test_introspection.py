"""``POST /oauth2/introspect`` (RFC 7662) on memory, SQLite and PostgreSQL: only clients
registered with ``introspection: true``; an active access, refresh or session token described,
anything else exactly ``{"active": false}``; a per-client limit when configured."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from authgate.entrypoints.app.config import ConfigError
from tests.app.conftest import MakeService, load_config
from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.openid_resource.conftest import (
    ISSUER,
    Provider,
    basic,
    service_config,
    start_provider,
)

DAN = FakeUser(sub="dan-1", email="dan@example.com", name="Dan D")


def seconds(at: dt.datetime) -> int:
    return int(at.timestamp())


async def test_an_access_token_is_described(provider: Provider) -> None:
    person = await provider.sign_in(DAN)
    issued = await provider.issue(person, scopes=("openid", "email"))
    answer = await provider.introspect(issued.access_token)
    assert answer.status == 200
    assert answer.headers["Cache-Control"] == "no-store"
    claims = issued.claims
    assert claims.auth_time is not None
    assert await answer.json() == {
        "active": True,
        "scope": "openid email",
        "client_id": "web",
        "sub": person.account_id,
        "exp": seconds(claims.expires_at),
        "iat": seconds(claims.issued_at),
        "iss": ISSUER,
        "aud": "web",
        "jti": claims.token_id,
        "sid": person.session_id,
        "token_type": "access_token",
        "auth_time": seconds(claims.auth_time),
    }


async def test_a_refresh_token_is_described(provider: Provider) -> None:
    person = await provider.sign_in(DAN)
    issued = await provider.issue(person, scopes=("openid", "offline_access"))
    assert issued.refresh_token is not None
    answer = await provider.introspect(issued.refresh_token, token_type_hint="access_token")
    assert answer.status == 200
    body = await answer.json()
    assert body["active"] is True
    assert body["token_type"] == "refresh_token"
    assert body["client_id"] == body["aud"] == "web"
    assert body["sub"] == person.account_id and body["sid"] == person.session_id
    assert body["scope"] == "openid offline_access" and body["iss"] == ISSUER
    assert body["exp"] > seconds(provider.clock.now() + dt.timedelta(days=29))
    assert "jti" not in body


async def test_a_session_token_is_described_while_its_session_lives(provider: Provider) -> None:
    """authgate.client's introspection check sends the session tokens it verifies."""
    person = await provider.sign_in(DAN)
    answer = await provider.introspect(person.session_token)
    body = await answer.json()
    assert body["active"] is True
    assert body["token_type"] == "session_token"
    assert body["sub"] == person.account_id and body["sid"] == person.session_id
    assert "client_id" not in body
    assert body["scope"] == "account:manage account:read"
    ended = await provider.client.post(
        "/v1/auth/logout", headers={"Authorization": f"Bearer {person.session_token}"}
    )
    assert ended.status == 204
    assert await (await provider.introspect(person.session_token)).json() == {"active": False}


async def test_anything_inactive_is_active_false_and_nothing_else(provider: Provider) -> None:
    person = await provider.sign_in(DAN)
    issued = await provider.issue(person)
    async with provider.resources.stores.units.begin() as tx:
        await tx.refresh_tokens.revoke_family(issued.family_id, provider.clock.now())
    assert issued.refresh_token is not None
    for token in (
        issued.access_token,
        issued.refresh_token,
        "unknown",
        "a.b.c",
        "x" * 20_000,
        person.session_token + "x",
    ):
        answer = await provider.introspect(token)
        assert answer.status == 200, token
        assert await answer.json() == {"active": False}, token


async def test_only_clients_allowed_to_introspect(memory_provider: Provider) -> None:
    provider = memory_provider
    person = await provider.sign_in(DAN)
    issued = await provider.issue(person)
    refused = await provider.introspect(issued.access_token, client_id="web")
    assert refused.status == 403
    assert (await refused.json())["error"] == "unauthorized_client"
    public = await provider.client.post(
        "/oauth2/introspect", data={"token": issued.access_token, "client_id": "spa"}
    )
    assert public.status == 403
    wrong = await provider.client.post(
        "/oauth2/introspect",
        data={"token": issued.access_token},
        headers={"Authorization": "Basic YXBpOndyb25n"},  # api:wrong
    )
    assert wrong.status == 401
    assert (await wrong.json())["error"] == "invalid_client"
    missing = await provider.client.post("/oauth2/introspect", data={}, headers=basic("api"))
    assert missing.status == 400
    # Servers only: no CORS.
    preflight = await provider.client.options(
        "/oauth2/introspect",
        headers={"Origin": "https://spa.example.com", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status == 405


async def test_the_per_client_limit(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
) -> None:
    provider = await start_provider(
        make_service,
        fake_idp,
        idp_clock,
        "memory://",
        {"ratelimit": {"introspection": "2/minute"}},
    )
    for _ in range(2):
        assert (await provider.introspect("unknown")).status == 200
    limited = await provider.introspect("unknown")
    assert limited.status == 429
    assert int(limited.headers["Retry-After"]) >= 1
    assert (await limited.json())["error"] == "temporarily_unavailable"
    # Counted per client: another client's budget is its own.
    assert (await provider.introspect("unknown", client_id="audit")).status == 200


def test_the_limit_is_one_rate_limit(tmp_path: Path) -> None:
    no_providers = {"app": {"callback_urls": []}}
    bad = service_config("memory://", {**no_providers, "ratelimit": {"introspection": "lots"}})
    with pytest.raises(ConfigError, match=r"^ratelimit.introspection: 'lots' is not one rate"):
        load_config(tmp_path, bad)
    unset = load_config(tmp_path, service_config("memory://", no_providers))
    assert unset.ratelimit.introspection is None
