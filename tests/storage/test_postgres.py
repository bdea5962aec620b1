"""PostgreSQL specifics: no orphan accounts, connection loss, clean-up without a cron."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import asyncpg
import pytest

from authgate.adapters.postgres import DatabaseUnavailable, PostgresStore, open_postgres
from authgate.adapters.sql.housekeeping import PeriodicPurge
from tests.support.ports import free_port
from tests.support.postgres import terminate_backends
from tests.support.records import T0, at, event, pending, verified
from tests.support.waiting import eventually

T = TypeVar("T")

# What an operation may raise while its connection is lost (the HTTP layer answers 500).
CONNECTION_ERRORS = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.AdminShutdownError,
    asyncpg.InternalClientError,  # a connection that got its server's farewell while idle
)


async def _eventually(operation: Callable[[], Awaitable[T]], attempts: int = 5) -> T:
    """The operation's result, retried on connection errors: an operation racing the loss of
    its connection may fail (as each connection of the pool notices its loss once)."""
    for _ in range(attempts - 1):
        try:
            return await operation()
        except CONNECTION_ERRORS:
            await asyncio.sleep(0.05)
    return await operation()


@pytest.fixture
async def pg(clean_postgres_url: str, asyncpg_pool: bool) -> AsyncIterator[PostgresStore]:
    store = await open_postgres(
        clean_postgres_url, 2, 5, 5.0, purge_interval=dt.timedelta(0), asyncpg_pool=asyncpg_pool
    )
    try:
        yield store
    finally:
        await store.close()


async def _count(store: PostgresStore, table: str) -> int:
    return int(await store.pool.fetchval(f"SELECT count(*) FROM {table}"))


async def test_a_lost_race_leaves_no_account_behind(pg: PostgresStore) -> None:
    v = verified("google", "race")
    results = await asyncio.gather(*(pg.accounts.create_with_identity(v, T0) for _ in range(50)))
    assert sum(created for _, created in results) == 1
    assert await _count(pg, "accounts") == 1
    assert await _count(pg, "identities") == 1


async def test_account_ids_are_uuids_and_profile_is_stored(pg: PostgresStore) -> None:
    v = verified("google", "p", profile={"locale": "fr", "picture": "https://x/y.png"})
    account, _ = await pg.accounts.create_with_identity(v, T0)
    row = await pg.pool.fetchrow("SELECT id, profile FROM accounts")
    assert row is not None
    assert str(row["id"]) == account.id
    assert row["profile"] == '{"locale": "fr", "picture": "https://x/y.png"}'


async def test_terminated_connections_are_replaced_without_a_new_pool(
    pg: PostgresStore, clean_postgres_url: str
) -> None:
    account, _ = await pg.accounts.create_with_identity(verified(), T0)
    pool = pg.pool
    # A statement in flight when its backend dies fails; idle connections die quietly.
    sleeper = asyncio.create_task(pg.pool.execute("SELECT pg_sleep(10)"))
    await eventually(  # the statement is running on its backend (not a fixed head start)
        lambda: pg.pool.fetchval(
            "SELECT count(*) > 0 FROM pg_stat_activity"
            " WHERE state = 'active' AND query = 'SELECT pg_sleep(10)'"
        ),
        what="the pg_sleep statement running",
    )
    assert await terminate_backends(clean_postgres_url) >= 2
    with pytest.raises(CONNECTION_ERRORS):
        await sleeper

    # The next operation may still meet a dead connection; after that, all succeed.
    assert await _eventually(lambda: pg.accounts.get(account.id)) == account
    for i in range(20):
        assert await pg.accounts.get(account.id) == account
        await pg.states.put(pending(f"after-{i}"))
    await pg.ping()
    assert pg.pool is pool


async def test_a_transaction_cut_by_connection_loss_is_rolled_back(
    pg: PostgresStore, clean_postgres_url: str
) -> None:
    account, _ = await pg.accounts.create_with_identity(verified("google", "g"), T0)
    await pg.accounts.link_identity(account.id, verified("apple", "a"), at(1))
    async with pg.pool.acquire() as conn:
        with pytest.raises(CONNECTION_ERRORS):
            async with conn.transaction():
                await conn.execute("DELETE FROM identities WHERE provider = 'apple'")
                await terminate_backends(clean_postgres_url)
                await conn.execute("SELECT 1")
    assert len(await _eventually(lambda: pg.accounts.list_identities(account.id))) == 2


async def test_an_unreachable_server_is_a_clear_error_without_the_password(
    asyncpg_pool: bool,
) -> None:
    url = f"postgresql://authgate:s3cret@127.0.0.1:{free_port()}/authgate"
    with pytest.raises(DatabaseUnavailable) as caught:
        await open_postgres(url, 1, 2, 2.0, asyncpg_pool=asyncpg_pool)
    message = str(caught.value)
    assert "s3cret" not in message
    assert "authgate:***@127.0.0.1" in message
    assert "\n" not in message


async def test_expired_states_and_old_events_are_purged_by_traffic(pg: PostgresStore) -> None:
    for i in range(5):
        await pg.states.put(pending(f"old-{i}", created=T0, ttl=dt.timedelta(minutes=1)))
    await pg.housekeeping_idle()
    await pg.states.put(pending("new", created=T0 + dt.timedelta(hours=1)))
    await pg.housekeeping_idle()
    assert await _count(pg, "sign_in_states") == 1

    await pg.events.record(event(0))
    await pg.housekeeping_idle()
    await pg.events.record(event(dt.timedelta(days=91).total_seconds()))
    await pg.housekeeping_idle()
    assert [e.at for e in await pg.events.recent()] == [T0 + dt.timedelta(days=91)]


async def test_a_purge_runs_at_most_once_per_interval_and_never_fails_its_trigger() -> None:
    runs: list[int] = []

    async def job() -> AsyncIterator[int]:
        runs.append(1)
        raise ConnectionResetError("database down")
        yield 0  # an async generator, as the purges are

    purge = PeriodicPurge("things", job, dt.timedelta(minutes=5))
    purge.trigger()
    await purge.wait()
    purge.trigger()  # too soon
    await purge.wait()
    assert runs == [1]
    await purge.close()

    every_time = PeriodicPurge("things", job, dt.timedelta(0))
    for _ in range(3):
        every_time.trigger()
        await every_time.wait()
    assert len(runs) == 4
    await every_time.close()
