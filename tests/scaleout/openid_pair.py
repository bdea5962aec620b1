"""The OpenID Provider on two ``authgate serve`` instances behind one address, for the suites
that run it so: one PostgreSQL database of its own, one Redis, one key file (the session key
and the provider's RSA key), one account."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import attrs

from bench.harness import ServiceProcess, migrate, mint_session, service_config, write_config
from bench.openid_bench import ISSUER, seed
from tests.support.postgres import PostgresServer


@attrs.frozen
class OpenIdPair:
    """The two instances' base URLs, an HTTP session without cookies, and the account."""

    a: str
    b: str
    http: aiohttp.ClientSession
    account: str
    keys: Path
    database_url: str

    async def session(self) -> str:
        """A new live session of the account (its session token)."""
        return await mint_session(self.keys, self.account, database_url=self.database_url)


@asynccontextmanager
async def openid_pair(
    tmp_path: Path,
    postgres_server: PostgresServer,
    redis_url: str,
    clients: dict[str, Any],
    **overrides: Any,
) -> AsyncIterator[OpenIdPair]:
    """Both instances serving ``clients`` on the issuer :data:`~bench.openid_bench.ISSUER`,
    with the other configuration sections in ``overrides``; the database is dropped after."""
    name = postgres_server.create_database()
    url = postgres_server.url(name)
    keys = tmp_path / "session-keys.json"
    files = [
        write_config(
            tmp_path / label,
            service_config(
                tmp_path / label,
                None,
                database_url=url,
                ratelimit_storage=redis_url,
                keys_file=keys,
                overrides={"rest": {"public_url": ISSUER}, "clients": clients, **overrides},
            ),
        )
        for label in ("a", "b")
    ]
    try:
        await asyncio.to_thread(migrate, files[0])
        account = await seed(url)
        async with AsyncExitStack() as stack:
            a = await stack.enter_async_context(ServiceProcess(files[0]))
            b = await stack.enter_async_context(ServiceProcess(files[1]))
            http = await stack.enter_async_context(
                aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())
            )
            yield OpenIdPair(a.url, b.url, http, account, keys, url)
    finally:
        postgres_server.drop_database(name)
