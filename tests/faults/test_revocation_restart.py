"""A provider-token revocation survives a crash of ``authgate serve``.

The account is deleted while Apple's revocation endpoint is down; the outbox row written with
the deletion is tried and kept; the process is killed (SIGKILL: no orderly shutdown); the
provider comes back; a new process on the same database delivers the revocation, with the
right token, and records it in the audit trail.
"""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from bench.harness import ServiceProcess, SignInDriver, migrate, service_config, write_config
from tests.fakeidp import FakeIdP, FakeUser
from tests.support.postgres import PostgresServer
from tests.support.waiting import eventually


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/authgate.db"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = server.create_database()
    try:
        yield server.url(name)
    finally:
        server.drop_database(name)


async def rows(database_url: str, sql: str) -> list[dict[str, Any]]:
    if database_url.startswith("sqlite:///"):
        with sqlite3.connect(database_url.removeprefix("sqlite:///")) as db:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute(sql)]
    conn = await asyncpg.connect(database_url)
    try:
        return [dict(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


async def test_a_revocation_queued_before_a_crash_is_delivered_after_the_restart(
    tmp_path: Path, fake_idp: FakeIdP, database_url: str
) -> None:
    config = service_config(
        tmp_path,
        fake_idp,
        database_url=database_url,
        overrides={
            "provider_tokens": {
                "keys": [{"id": "k1", "secret": secrets.token_urlsafe(32)}],
                "retry_initial_seconds": 0.2,
                "retry_max_seconds": 0.5,
                "poll_seconds": 0.1,
                "lease_seconds": 5,
            },
        },
    )
    config_file = write_config(tmp_path, config)
    if database_url.startswith("postgres"):
        await asyncio.to_thread(migrate, config_file)
    apple = fake_idp.apple

    async with SignInDriver(fake_idp) as driver, aiohttp.ClientSession() as http:
        first = ServiceProcess(config_file)
        async with first:
            result = await driver.complete(
                first.url, "apple", user=FakeUser(sub="crash-1"), intent="register"
            )
            assert result.signed_in and result.session, result
            [refresh_token] = apple.refresh_tokens
            apple.revocation_down = True
            async with http.delete(
                f"{first.url}/v1/account", headers={"Authorization": f"Bearer {result.session}"}
            ) as response:
                assert response.status == 204, await response.text()
            await eventually(lambda: apple.hits["revoke"] >= 2, what="attempts while down")
            first.process.kill()  # type: ignore[union-attr]
            await first.wait(10)

        [queued] = await rows(database_url, "SELECT * FROM provider_token_revocations")
        assert queued["attempts"] >= 1
        assert refresh_token not in str(queued)
        assert apple.revocations == []

        apple.revocation_down = False
        async with ServiceProcess(config_file) as second:
            await eventually(lambda: len(apple.revocations) == 1, what="delivered after restart")
            [delivered] = apple.revocations
            assert (delivered.token, delivered.hint, delivered.known) == (
                refresh_token,
                "refresh_token",
                True,
            )

            async def recorded() -> bool:
                outbox = await rows(database_url, "SELECT id FROM provider_token_revocations")
                audit = await rows(
                    database_url,
                    "SELECT provider FROM sign_in_events WHERE outcome = 'provider_token_revoked'",
                )
                return not outbox and [r["provider"] for r in audit] == ["apple"]

            await eventually(recorded, what="the outbox emptied and the revocation audited")
            assert refresh_token not in second.log()
        assert refresh_token not in first.log()
