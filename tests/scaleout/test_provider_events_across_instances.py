"""Provider events across two ``authgate serve`` instances on one PostgreSQL and one Redis:
a user signed in on both, the provider pushes its event to one instance, and both
refuse the user's session within a second (the revocation channel)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp
import pytest

from bench.harness import ServiceProcess, SignInDriver, migrate, service_config, write_config
from tests.fakeidp import FakeIdP, FakeUser
from tests.fakeidp.events import apple_notification, logout_token, security_event
from tests.support.postgres import PostgresServer

from .test_revocation_across_instances import (
    Pair,
    bearer,
    refused_within,
    signed_in,
    status,
    warm,
)

RECEIVERS = {
    "providers": {
        "google": {"backchannel_logout": True, "notifications": True},
        "apple": {"notifications": True},
    }
}


@pytest.fixture
async def pair(
    tmp_path: Path, fake_idp: FakeIdP, postgres_server: PostgresServer, redis_url: str
) -> AsyncIterator[Pair]:
    """Two instances with every receiver on, sharing PostgreSQL, Redis and session keys."""
    name = postgres_server.create_database()
    url = postgres_server.url(name)
    try:
        async with AsyncExitStack() as stack:
            files = []
            for label in ("a", "b"):
                config = service_config(
                    tmp_path / label,
                    fake_idp,
                    database_url=url,
                    ratelimit_storage=redis_url,
                    keys_file=tmp_path / "session-keys.json",
                    overrides={
                        **RECEIVERS,
                        "state": {"store": "database"},
                        "ratelimit": {"trusted_proxies": ["127.0.0.1/32"]},
                    },
                )
                files.append(write_config(tmp_path / label, config))
            await asyncio.to_thread(migrate, files[0])
            a = await stack.enter_async_context(ServiceProcess(files[0]))
            b = await stack.enter_async_context(ServiceProcess(files[1]))
            yield a.url, b.url
    finally:
        postgres_server.drop_database(name)


Deliver = Callable[[aiohttp.ClientSession, str, FakeIdP, str], Awaitable[int]]


async def risc_sessions_revoked(
    http: aiohttp.ClientSession, base: str, fake: FakeIdP, sub: str
) -> int:
    token = security_event(fake.google, "sessions-revoked", sub)
    headers = {"Content-Type": "application/secevent+jwt"}
    url = f"{base}/v1/providers/google/notifications"
    async with http.post(url, data=token, headers=headers) as r:
        return r.status


async def backchannel_logout(
    http: aiohttp.ClientSession, base: str, fake: FakeIdP, sub: str
) -> int:
    form = {"logout_token": logout_token(fake.google, sub=sub)}
    async with http.post(f"{base}/v1/providers/google/backchannel-logout", data=form) as r:
        return r.status


@pytest.mark.parametrize(
    ("deliver", "answer"), [(risc_sessions_revoked, 202), (backchannel_logout, 200)]
)
async def test_a_providers_event_on_one_instance_is_refused_by_both_within_a_second(
    pair: Pair, fake_idp: FakeIdP, deliver: Deliver, answer: int
) -> None:
    a, b = pair
    async with SignInDriver(fake_idp) as driver, aiohttp.ClientSession() as http:
        on_a = await signed_in(driver, a, "victim", intent="register")
        on_b = await signed_in(driver, b, "victim")
        bystander = await signed_in(driver, b, "bystander", intent="register")
        await warm(http, pair, on_a, on_b, bystander)

        assert await deliver(http, a, fake_idp, "victim") == answer

        for base in pair:
            for token in (on_a, on_b):
                await refused_within(http, base, token, 1.0)
            assert await status(http, base, bystander) == 200


async def test_apple_account_delete_on_one_instance_ends_the_account_on_both(
    pair: Pair, fake_idp: FakeIdP
) -> None:
    a, b = pair
    async with SignInDriver(fake_idp) as driver, aiohttp.ClientSession() as http:
        result = await driver.complete(a, "apple", user=_apple_user(), intent="register")
        assert result.signed_in and result.session
        on_a = result.session
        again = await driver.complete(b, "apple", user=_apple_user(), intent="login")
        assert again.signed_in and again.session
        on_b = again.session
        await warm(http, pair, on_a, on_b)

        body = apple_notification(fake_idp.apple, "account-delete", _apple_user().sub)
        async with http.post(f"{b}/v1/providers/apple/notifications", json=body) as r:
            assert r.status == 200

        for base in pair:
            for token in (on_a, on_b):
                await refused_within(http, base, token, 1.0)
        async with http.get(f"{a}/v1/account", headers=bearer(on_a)) as r:
            assert r.status == 401


def _apple_user() -> FakeUser:
    return FakeUser(sub="000777.apple-victim.0001", email="v@privaterelay.appleid.com")
