"""Revocation across two ``authgate serve`` instances on one PostgreSQL and one Redis (issue
"Sessions you can end"): a session ended on one instance is refused by the other within a
second, through the revocation channel (Redis pub/sub, or PostgreSQL LISTEN/NOTIFY); with no
channel, the short cache lifetime bounds how long the other instance still accepts it."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bench.harness import ServiceProcess, SignInDriver, migrate, service_config, write_config
from tests.fakeidp import FakeIdP, FakeUser
from tests.support.postgres import PostgresServer

Pair = tuple[str, str]
MakePair = Callable[..., Awaitable[Pair]]


def unique_address() -> str:
    return f"2001:db8:{secrets.token_hex(2)}:{secrets.token_hex(2)}::{secrets.token_hex(2)}"


@pytest.fixture
async def make_pair(
    tmp_path: Path, fake_idp: FakeIdP, postgres_server: PostgresServer, redis_url: str
) -> AsyncIterator[MakePair]:
    """``await make_pair(channel, cache_seconds)``: two instances, their base URLs."""
    names: list[str] = []
    async with AsyncExitStack() as stack:

        async def start(channel: str = "auto", cache_seconds: float = 5.0) -> Pair:
            name = postgres_server.create_database()
            names.append(name)
            url = postgres_server.url(name)
            folder = tmp_path / name
            keys = folder / "session-keys.json"
            files = []
            for label in ("a", "b"):
                config = service_config(
                    folder / label,
                    fake_idp,
                    database_url=url,
                    ratelimit_storage=redis_url,
                    keys_file=keys,
                    overrides={
                        "state": {"store": "database"},
                        "ratelimit": {"trusted_proxies": ["127.0.0.1/32"]},
                        "session": {
                            "revocation_channel": channel,
                            "revocation_cache_seconds": cache_seconds,
                        },
                    },
                )
                files.append(write_config(folder / label, config))
            await asyncio.to_thread(migrate, files[0])
            a = await stack.enter_async_context(ServiceProcess(files[0]))
            b = await stack.enter_async_context(ServiceProcess(files[1]))
            return a.url, b.url

        try:
            yield start
        finally:
            await stack.aclose()
            for name in names:
                postgres_server.drop_database(name)


async def status(http: aiohttp.ClientSession, base: str, token: str) -> int:
    async with http.get(
        f"{base}/v1/account/providers", headers={"Authorization": f"Bearer {token}"}
    ) as response:
        await response.read()
        return response.status


async def refused_within(http: aiohttp.ClientSession, base: str, token: str, limit: float) -> float:
    """Seconds until ``base`` refuses ``token`` (polling); fails past ``limit``."""
    started = time.monotonic()
    while True:
        if await status(http, base, token) == 401:
            return time.monotonic() - started
        elapsed = time.monotonic() - started
        assert elapsed < limit, f"{base} still accepts the revoked session after {elapsed:.2f}s"
        await asyncio.sleep(0.02)


async def signed_in(driver: SignInDriver, base: str, sub: str, intent: str = "login") -> str:
    result = await driver.complete(
        base, user=FakeUser(sub=sub), intent=intent, headers={"X-Forwarded-For": unique_address()}
    )
    assert result.signed_in and result.session, result
    return result.session


async def warm(http: aiohttp.ClientSession, pair: Pair, *tokens: str) -> None:
    """Both instances have each token's session in their live cache."""
    for base in pair:
        for token in tokens:
            assert await status(http, base, token) == 200


def bearer(token: str) -> dict[str, Any]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("channel", ["auto", "postgres"])  # auto: Redis here
async def test_logout_on_one_instance_is_refused_by_the_other_within_a_second(
    make_pair: MakePair, fake_idp: FakeIdP, channel: str
) -> None:
    pair = await make_pair(channel)
    a, b = pair
    async with SignInDriver(fake_idp) as driver, aiohttp.ClientSession() as http:
        token = await signed_in(driver, a, "thief-victim", intent="register")
        await warm(http, pair, token)
        async with http.post(f"{a}/v1/auth/logout", headers=bearer(token)) as out:
            assert out.status == 204
        assert await status(http, a, token) == 401  # at once where it was revoked
        await refused_within(http, b, token, 1.0)


async def test_sign_out_everywhere_else_reaches_both_instances(
    make_pair: MakePair, fake_idp: FakeIdP
) -> None:
    pair = await make_pair()
    a, b = pair
    async with SignInDriver(fake_idp) as driver, aiohttp.ClientSession() as http:
        stolen = await signed_in(driver, a, "owner", intent="register")
        mine = await signed_in(driver, b, "owner")
        await warm(http, pair, stolen, mine)
        async with http.delete(f"{b}/v1/account/sessions", headers=bearer(mine)) as response:
            assert response.status == 204
        for base in pair:
            await refused_within(http, base, stolen, 1.0)
            assert await status(http, base, mine) == 200


async def test_without_a_channel_the_cache_lifetime_bounds_staleness(
    make_pair: MakePair, fake_idp: FakeIdP
) -> None:
    pair = await make_pair("local", cache_seconds=1.0)
    a, b = pair
    async with SignInDriver(fake_idp) as driver, aiohttp.ClientSession() as http:
        token = await signed_in(driver, a, "no-channel", intent="register")
        await warm(http, pair, token)
        async with http.post(f"{a}/v1/auth/logout", headers=bearer(token)) as out:
            assert out.status == 204
        assert await status(http, a, token) == 401
        # b learns nothing, but trusts its cached verdict for at most a second
        await refused_within(http, b, token, 1.0 + 1.0)
