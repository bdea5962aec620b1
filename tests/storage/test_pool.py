"""The PostgreSQL adapters' connection pool (src/adapters/postgres/pool.py) on the real server.

What the adapters rely on is checked on both pools, ours and asyncpg's (the library's path kept
beside it, ``open_asyncpg_pool``); what only ours has (a connection that failed to open giving
its place back, the idle sweep's settings, a waiting lease refused at close) on ours."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import pytest

from authgate.adapters.postgres.pool import ConnectionPool, Pool, open_asyncpg_pool, open_pool
from tests.support.postgres import terminate_backends


async def _backends(url: str) -> int:
    """Connections of the pool's application name to the database right now."""
    conn = await asyncpg.connect(url)
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = 'pool-test'"
            )
        )
    finally:
        await conn.close()


def _connect(url: str) -> Callable[[], Awaitable[asyncpg.Connection]]:
    def connect() -> Awaitable[asyncpg.Connection]:
        return asyncpg.connect(url, server_settings={"application_name": "pool-test"})

    return connect


@pytest.fixture
async def pool(empty_postgres_url: str, asyncpg_pool: bool) -> AsyncIterator[ConnectionPool]:
    made = await (open_asyncpg_pool if asyncpg_pool else open_pool)(
        empty_postgres_url,
        min_size=1,
        max_size=2,
        timeout=5.0,
        server_settings={"application_name": "pool-test"},
    )
    try:
        yield made
    finally:
        await made.close()


async def test_opens_min_size_and_never_more_than_max_size(
    pool: ConnectionPool, empty_postgres_url: str
) -> None:
    assert pool.get_size() == 1
    assert await _backends(empty_postgres_url) == 1
    # Six statements at once on two connections: all answered, in turn.
    answers = await asyncio.gather(
        *(pool.fetchval("SELECT $1::int, pg_sleep(0.05)", i) for i in range(6))
    )
    assert answers == list(range(6))
    assert pool.get_size() == 2
    assert await _backends(empty_postgres_url) == 2


async def test_waiters_are_served_first_come_first_served(pool: ConnectionPool) -> None:
    order: list[int] = []
    async with pool.acquire(), pool.acquire():

        async def lease(i: int) -> None:
            async with pool.acquire() as conn:
                order.append(i)
                await conn.execute("SELECT 1")

        waiting = [asyncio.create_task(lease(i)) for i in range(5)]
        await asyncio.sleep(0.05)
        assert order == []  # both connections are leased
    await asyncio.gather(*waiting)
    assert order == [0, 1, 2, 3, 4]


async def test_a_lease_is_the_same_connection_until_given_back(pool: ConnectionPool) -> None:
    async with pool.acquire() as conn:
        pid = conn.get_server_pid()
        async with conn.transaction():
            await conn.execute("CREATE TEMP TABLE t (x int) ON COMMIT DROP")
            await conn.execute("INSERT INTO t VALUES (1)")
            assert await conn.fetchval("SELECT count(*) FROM t") == 1
    async with pool.acquire() as again:  # the warmest idle connection comes back first
        assert again.get_server_pid() == pid


async def test_a_connection_given_back_in_a_transaction_leaves_nothing_behind(
    pool: ConnectionPool,
) -> None:
    async with pool.acquire() as conn:
        pid = conn.get_server_pid()
        transaction = conn.transaction()
        await transaction.start()
        await conn.execute("CREATE TEMP TABLE left_open (x int)")
    if isinstance(pool, Pool):  # ours ends that connection; asyncpg's rolls it back
        assert conn.is_closed()
    async with pool.acquire() as fresh:
        if isinstance(pool, Pool):
            assert fresh.get_server_pid() != pid
        assert not fresh.is_in_transaction()
        assert await fresh.fetchval("SELECT to_regclass('pg_temp.left_open')") is None


async def test_a_statement_cancelled_in_flight_leaves_a_usable_connection(
    pool: ConnectionPool,
) -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await pool.fetchval("SELECT pg_sleep(5)")
    # Every connection, the cancelled one included, answers the next statements.
    assert await asyncio.gather(*(pool.fetchval("SELECT $1::int", i) for i in range(4))) == [
        0,
        1,
        2,
        3,
    ]


async def test_terminated_connections_are_replaced(
    pool: ConnectionPool, empty_postgres_url: str
) -> None:
    await asyncio.gather(*(pool.fetchval("SELECT pg_sleep(0.05)") for _ in range(2)))
    assert await terminate_backends(empty_postgres_url) == 2
    # A dead idle connection may fail one statement; then the pool serves again.
    failures = 0
    for _ in range(10):
        try:
            assert await pool.fetchval("SELECT 1") == 1
        except (asyncpg.PostgresConnectionError, asyncpg.InterfaceError, OSError):
            failures += 1
    assert failures <= 2
    assert await pool.fetchval("SELECT 2") == 2
    assert pool.get_size() <= 2


async def test_a_failed_connect_gives_its_place_back(empty_postgres_url: str) -> None:
    attempts = 0
    good = _connect(empty_postgres_url)

    async def flaky() -> asyncpg.Connection:
        nonlocal attempts
        attempts += 1
        if attempts <= 3:
            raise OSError("connection refused")
        return await good()

    pool = Pool(flaky, min_size=0, max_size=1)
    try:
        for _ in range(3):
            with pytest.raises(OSError):
                await pool.fetchval("SELECT 1")
        assert pool.get_size() == 0
        assert await pool.fetchval("SELECT 1") == 1  # the one place was not lost
    finally:
        await pool.close()


async def test_idle_connections_beyond_min_size_are_closed(empty_postgres_url: str) -> None:
    pool = Pool(
        _connect(empty_postgres_url),
        min_size=1,
        max_size=3,
        max_idle_seconds=0.2,
        sweep_interval=0.0,
    )
    try:
        await asyncio.gather(*(pool.fetchval("SELECT pg_sleep(0.05)") for _ in range(3)))
        assert pool.get_size() == 3
        await asyncio.sleep(0.3)
        await pool.fetchval("SELECT 1")  # a give-back looks for idle connections
        assert pool.get_size() == 1
        await asyncio.sleep(0.1)  # their close is sent in the background
        assert await _backends(empty_postgres_url) == 1
    finally:
        await pool.close()


async def test_close_waits_for_leases_then_refuses_new_ones(
    pool: ConnectionPool, empty_postgres_url: str
) -> None:
    released = asyncio.Event()

    async def hold() -> None:
        async with pool.acquire() as conn:
            await released.wait()
            await conn.execute("SELECT 1")  # still usable while the pool closes

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0.01)
    closing = asyncio.create_task(pool.close())
    await asyncio.sleep(0.05)
    assert not closing.done()
    with pytest.raises(asyncpg.InterfaceError):
        await pool.fetchval("SELECT 1")
    released.set()
    await asyncio.wait_for(asyncio.gather(holder, closing), 5)
    assert pool.get_size() == 0
    assert await _backends(empty_postgres_url) == 0


async def test_a_lease_waiting_when_the_pool_closes_is_refused(empty_postgres_url: str) -> None:
    pool = Pool(_connect(empty_postgres_url), min_size=0, max_size=1)
    released = asyncio.Event()

    async def hold() -> None:
        async with pool.acquire():
            await released.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0.05)
    waiter = asyncio.create_task(pool.fetchval("SELECT 1"))  # waits for the one place
    await asyncio.sleep(0.01)
    closing = asyncio.create_task(pool.close())
    await asyncio.sleep(0.01)
    released.set()
    await asyncio.wait_for(asyncio.gather(holder, closing), 5)
    with pytest.raises(asyncpg.InterfaceError):
        await waiter
    assert pool.get_size() == 0
    assert await _backends(empty_postgres_url) == 0
