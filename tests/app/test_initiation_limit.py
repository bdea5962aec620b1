"""Starting a sign-in has its own per-client-address limit (``ratelimit.initiation``): every
``GET /v1/auth/{provider}`` stores a pending sign-in, so an unlimited client grows the store
without bound. The limit is exact under concurrency on memory and on a real Redis, refuses
before any work (nothing is stored for a refused request), is independent of the callback's
budget, fails open or closed like the callback's, can be switched off, and is in the OpenAPI
document."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from authgate.entrypoints.app.config import ConfigError
from tests.fakeidp import FakeIdP

from .conftest import APP_URL, CALLBACK_URL, Client, MakeService, load_config

START = "/v1/auth/google"
CALLBACK = "/v1/auth/google/callback"
JSON = {"Accept": "application/json"}
LIMITED = {"error": "rate_limited", "message": "too many sign-ins started; retry later"}


def unique_ip() -> str:
    n = uuid.uuid4().int
    return f"10.{n % 250}.{(n >> 8) % 250}.{(n >> 16) % 250 + 1}"


@pytest.fixture(params=["memory", "redis"])
def storage(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    url: str = request.getfixturevalue("redis_url")
    return url


def overrides(fake_idp: FakeIdP, database: Path, **ratelimit: Any) -> dict[str, Any]:
    return {
        "app": {"url": APP_URL, "callback_urls": [CALLBACK_URL.format(name="google")]},
        "database": {"url": f"sqlite:///{database}"},
        "ratelimit": {"trusted_proxies": ["127.0.0.1/32"], "initiation": "5/minute", **ratelimit},
        "providers": {"google": fake_idp.config("google")},
    }


async def start(client: Client, address: str | None = None) -> Any:
    headers = dict(JSON)
    if address is not None:
        headers["X-Forwarded-For"] = address
    return await client.get(
        START, params={"redirect_uri": CALLBACK_URL.format(name="google")}, headers=headers
    )


def pending(database: Path) -> int:
    """How many pending sign-ins the store holds."""
    with sqlite3.connect(database) as db:
        (count,) = db.execute("SELECT count(*) FROM sign_in_states").fetchone()
    return int(count)


async def test_twelve_concurrent_starts_let_exactly_five_through_and_store_five(
    make_service: MakeService, fake_idp: FakeIdP, tmp_path: Path, storage: str
) -> None:
    database = tmp_path / "authgate.db"
    client = await make_service(overrides(fake_idp, database, storage=storage))
    address = unique_ip()
    responses = await asyncio.gather(*(start(client, address) for _ in range(12)))
    statuses = sorted(r.status for r in responses)
    assert statuses == [200] * 5 + [429] * 7
    assert pending(database) == 5  # nothing stored for a refused start
    limited = next(r for r in responses if r.status == 429)
    assert await limited.json() == LIMITED
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    assert limited.headers["Cache-Control"] == "no-store"
    assert "authgate_binding" not in limited.cookies
    # Another client address has its own budget.
    assert (await start(client, unique_ip())).status == 200
    assert pending(database) == 6


async def test_the_sixth_start_in_a_row_is_refused(
    make_service: MakeService, fake_idp: FakeIdP, tmp_path: Path
) -> None:
    database = tmp_path / "authgate.db"
    client = await make_service(overrides(fake_idp, database))
    for _ in range(5):
        assert (await start(client)).status == 200  # no X-Forwarded-For: the peer address
    refused = await start(client)
    assert refused.status == 429
    assert await refused.json() == LIMITED
    assert pending(database) == 5


async def test_the_limit_is_hit_before_any_work(
    make_service: MakeService, fake_idp: FakeIdP, tmp_path: Path
) -> None:
    client = await make_service(overrides(fake_idp, tmp_path / "authgate.db"))
    for _ in range(5):  # refused by the service, but each still counted
        assert (await client.get("/v1/auth/nope", headers=JSON)).status == 400
    response = await client.get("/v1/auth/nope", headers=JSON)
    assert response.status == 429
    assert await response.json() == LIMITED


async def test_initiation_and_callback_budgets_are_independent(
    make_service: MakeService, fake_idp: FakeIdP, tmp_path: Path
) -> None:
    client = await make_service(overrides(fake_idp, tmp_path / "authgate.db"))
    starter, caller = unique_ip(), unique_ip()
    for _ in range(5):
        assert (await start(client, starter)).status == 200
    assert (await start(client, starter)).status == 429
    # The starts did not spend any of the callback budget (10/minute) ...
    for _ in range(10):
        callback = await client.get(CALLBACK, headers={"X-Forwarded-For": starter})
        assert callback.status != 429
    assert (await client.get(CALLBACK, headers={"X-Forwarded-For": starter})).status == 429
    # ... and spent callbacks leave the initiation budget whole.
    for _ in range(10):
        assert (await client.get(CALLBACK, headers={"X-Forwarded-For": caller})).status != 429
    for _ in range(5):
        assert (await start(client, caller)).status == 200


@pytest.mark.parametrize("off", [None, ""])
async def test_an_empty_initiation_limit_switches_it_off(
    make_service: MakeService, fake_idp: FakeIdP, tmp_path: Path, off: str | None
) -> None:
    client = await make_service(overrides(fake_idp, tmp_path / "authgate.db", initiation=off))
    statuses = [(await start(client)).status for _ in range(70)]
    assert statuses == [200] * 70


async def test_the_default_is_sixty_per_minute(
    make_service: MakeService, fake_idp: FakeIdP, tmp_path: Path
) -> None:
    config = overrides(fake_idp, tmp_path / "authgate.db")
    del config["ratelimit"]["initiation"]
    client = await make_service(config)
    statuses = await asyncio.gather(*(start(client) for _ in range(61)))
    assert sorted(r.status for r in statuses) == [200] * 60 + [429]


async def test_redis_down_fails_open_by_default_and_closed_when_configured(
    make_service: MakeService, fake_idp: FakeIdP, tmp_path: Path
) -> None:
    dead = "redis://127.0.0.1:1/0"
    opened = await make_service(overrides(fake_idp, tmp_path / "open.db", storage=dead))
    assert [(await start(opened)).status for _ in range(7)] == [200] * 7
    closed = await make_service(
        overrides(fake_idp, tmp_path / "closed.db", storage=dead, fail_open=False)
    )
    refused = await start(closed)
    assert refused.status == 429
    assert await refused.json() == LIMITED
    assert pending(tmp_path / "closed.db") == 0


async def test_the_openapi_document_lists_429_for_the_initiation(
    make_service: MakeService,
) -> None:
    client = await make_service()
    document = await (await client.get("/openapi.json")).json()
    responses = document["paths"]["/v1/auth/{provider}"]["get"]["responses"]
    assert "429" in responses
    schema = responses["429"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["error", "message"]  # AppError, as the callback's 429
    callback = document["paths"]["/v1/auth/{provider}/callback"]["get"]["responses"]
    # The same schema; each names its own refusal in its example.
    assert (
        responses["429"]["content"]["application/json"]["schema"]
        == (callback["429"]["content"]["application/json"]["schema"])
    )


@pytest.mark.parametrize("value", ["lots", "5/fortnight", "0/minute"])
def test_a_malformed_initiation_limit_is_a_one_line_config_error(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, {"ratelimit": {"initiation": value}})
    message = str(raised.value)
    assert message.startswith("ratelimit.initiation: ")
    assert "\n" not in message
