"""The connections of the PostgreSQL adapters: a pool of our own, asyncpg's pool beside it.

Ours because asyncpg's lease and release cost about as much as the statement (a task per
release, an idle timer per release, a proxy per call; figures in docs/benchmarks.md,
``bench/pool_bench.py``); it stays while that bench says it pays. :class:`Pool` keeps what the
adapters rely on, with asyncpg's public ``Connection`` only:

* at most ``max_size`` connections, ``min_size`` opened with the pool; a lease takes the most
  recently used idle connection (warm statement cache), opens one when there is room, else
  waits its turn (first come, first served);
* a closed connection (server gone, terminated) is dropped when met, so the pool serves again
  after an outage;
* a connection given back inside a transaction (a block cancelled mid-rollback) is terminated,
  so nothing half done leaks into the next lease (asyncpg makes the statement after a cancelled
  one wait for the cancellation);
* idle connections beyond ``min_size`` unused for ``max_idle_seconds`` are closed, checked when
  connections are given back (at most once a minute).

:func:`open_asyncpg_pool` opens asyncpg's pool with the same settings
(``open_postgres(..., asyncpg_pool=True)``); the adapter tests run on both pools.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any

import asyncpg

log = logging.getLogger("authgate.storage")

Connect = Callable[[], Awaitable[asyncpg.Connection]]

SWEEP_INTERVAL = 60.0  # seconds between looks for idle connections to close
MAX_IDLE_SECONDS = 300.0  # an idle connection beyond min_size is closed after this long


class Pool:
    """At most ``max_size`` asyncpg connections made by ``connect`` (see the module's text).
    :func:`open_pool` makes one; :meth:`close` ends it."""

    def __init__(
        self,
        connect: Connect,
        *,
        min_size: int,
        max_size: int,
        max_idle_seconds: float = MAX_IDLE_SECONDS,
        sweep_interval: float = SWEEP_INTERVAL,
    ) -> None:
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValueError("pool sizes: need 0 <= min_size <= max_size, max_size >= 1")
        self._connect = connect
        self._min_size = min_size
        self._max_idle = max_idle_seconds
        self._sweep_interval = sweep_interval
        self._permits = asyncio.Semaphore(max_size)  # one per lease
        self._idle: deque[tuple[asyncpg.Connection, float]] = deque()  # newest last
        self._leased: set[asyncpg.Connection] = set()
        self._closing = False
        self._all_returned: asyncio.Event | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._next_sweep = time.monotonic() + sweep_interval

    # -- leases --------------------------------------------------------------------------

    def acquire(self) -> _Lease:
        """``async with pool.acquire() as conn:`` a connection of its own for the block."""
        return _Lease(self)

    async def _take(self) -> asyncpg.Connection:
        if self._closing:
            raise asyncpg.InterfaceError("the connection pool is closing")
        await self._permits.acquire()
        try:
            if self._closing:  # it began closing while this lease waited its turn
                raise asyncpg.InterfaceError("the connection pool is closing")
            idle = self._idle
            while idle:
                conn = idle.pop()[0]
                if not conn.is_closed():
                    break
            else:
                conn = await self._connect()
        except BaseException:
            self._permits.release()
            raise
        self._leased.add(conn)
        return conn

    def _give_back(self, conn: asyncpg.Connection) -> None:
        self._leased.discard(conn)
        if conn.is_closed():
            pass
        elif conn.is_in_transaction():
            log.warning("a PostgreSQL connection came back inside a transaction: terminated")
            conn.terminate()
        elif self._closing:
            self._in_background(conn.close())
        else:
            now = time.monotonic()
            self._idle.append((conn, now))
            if now >= self._next_sweep:
                self._sweep(now)
        self._permits.release()
        if self._all_returned is not None and not self._leased:
            self._all_returned.set()

    def _sweep(self, now: float) -> None:
        """Close idle connections unused for ``max_idle_seconds``, keeping ``min_size`` open."""
        self._next_sweep = now + self._sweep_interval
        idle = self._idle
        while (
            idle
            and len(idle) + len(self._leased) > self._min_size
            and now - idle[0][1] >= self._max_idle
        ):
            self._in_background(idle.popleft()[0].close())

    def _in_background(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await work
            except Exception as e:  # closing a connection that fails: it is gone either way
                log.debug("closing a PostgreSQL connection failed: %s", e)

        task = asyncio.ensure_future(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- one statement on a leased connection --------------------------------------------

    async def execute(self, query: str, *args: object) -> str:
        conn = await self._take()
        try:
            return await conn.execute(query, *args)
        finally:
            self._give_back(conn)

    async def fetch(self, query: str, *args: object) -> list[asyncpg.Record]:
        conn = await self._take()
        try:
            return await conn.fetch(query, *args)
        finally:
            self._give_back(conn)

    async def fetchrow(self, query: str, *args: object) -> asyncpg.Record | None:
        conn = await self._take()
        try:
            return await conn.fetchrow(query, *args)
        finally:
            self._give_back(conn)

    async def fetchval(self, query: str, *args: object) -> Any:
        conn = await self._take()
        try:
            return await conn.fetchval(query, *args)
        finally:
            self._give_back(conn)

    # -- size and the end ----------------------------------------------------------------

    def get_size(self) -> int:
        """Connections open: leased and idle."""
        return len(self._leased) + len(self._idle)

    async def _fill(self) -> None:
        """Open ``min_size`` connections (all or none)."""
        opened = await asyncio.gather(
            *(self._connect() for _ in range(self._min_size)), return_exceptions=True
        )
        failed = [e for e in opened if isinstance(e, BaseException)]
        good = [c for c in opened if isinstance(c, asyncpg.Connection)]
        if failed:
            for conn in good:
                conn.terminate()
            raise failed[0]
        now = time.monotonic()
        self._idle.extend((conn, now) for conn in good)

    async def close(self) -> None:
        """Refuse new leases, wait until every leased connection is given back, then close
        them all."""
        self._closing = True
        if self._leased:
            self._all_returned = asyncio.Event()
            await self._all_returned.wait()
        idle, self._idle = list(self._idle), deque()
        for conn, _ in idle:
            self._in_background(conn.close())
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    def terminate(self) -> None:
        """Close every connection now, leased or not, without waiting."""
        self._closing = True
        for conn, _ in self._idle:
            conn.terminate()
        self._idle.clear()
        for conn in list(self._leased):
            conn.terminate()
        for task in self._background:
            task.cancel()


class _Lease:
    __slots__ = ("_conn", "_pool")

    def __init__(self, pool: Pool) -> None:
        self._pool = pool
        self._conn: asyncpg.Connection | None = None

    async def __aenter__(self) -> asyncpg.Connection:
        self._conn = await self._pool._take()
        return self._conn

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool._give_back(conn)


async def open_pool(
    url: str,
    *,
    min_size: int,
    max_size: int,
    timeout: float,  # noqa: ASYNC109 - a setting of each connection, not a deadline
    server_settings: Mapping[str, str] | None = None,
) -> Pool:
    """A :class:`Pool` on ``url`` with ``min_size`` connections open; ``timeout`` bounds
    connecting and every statement (asyncpg's ``command_timeout``)."""
    settings = dict(server_settings or {})

    def connect() -> Awaitable[asyncpg.Connection]:
        return asyncpg.connect(
            url, timeout=timeout, command_timeout=timeout, server_settings=settings
        )

    pool = Pool(connect, min_size=min_size, max_size=max_size)
    await pool._fill()
    return pool


# What the adapters lease connections from: our pool, or asyncpg's (the library's path), and
# what a lease yields: the connection itself (ours), or asyncpg's proxy of it (asyncpg's).
ConnectionPool = Pool | asyncpg.Pool
Leased = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy


async def _send_nothing(_conn: asyncpg.Connection) -> None:
    """asyncpg's pool's reset at release, without a statement: the adapters change no session
    state (no ``SET``, ``LISTEN``, advisory lock or cursor outlives a lease), and asyncpg rolls
    back a transaction left open before calling it."""


async def open_asyncpg_pool(
    url: str,
    *,
    min_size: int,
    max_size: int,
    timeout: float,  # noqa: ASYNC109 - a setting of each connection, not a deadline
    server_settings: Mapping[str, str] | None = None,
) -> asyncpg.Pool:
    """asyncpg's pool with the settings of :func:`open_pool`: the same sizes, ``timeout`` for
    connecting and every statement, idle connections beyond ``min_size`` closed after
    :data:`MAX_IDLE_SECONDS`, and no reset statement at release."""
    return await asyncpg.create_pool(
        url,
        min_size=min_size,
        max_size=max_size,
        max_inactive_connection_lifetime=MAX_IDLE_SECONDS,
        reset=_send_nothing,
        timeout=timeout,
        command_timeout=timeout,
        server_settings=dict(server_settings or {}),
    )
