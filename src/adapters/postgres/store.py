"""One connection pool (:mod:`.pool`: ours, or asyncpg's) shared by the PostgreSQL adapters,
opened and closed as a unit."""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Unpack

from authgate.adapters.sql.store import SqlRepositories, SqlUnitOfWork, StoreOptions

from .dialect import POSTGRES
from .errors import unavailable
from .migrations import CONNECT_ERRORS, check_schema
from .pool import ConnectionPool, open_asyncpg_pool, open_pool
from .unit import PoolDb, UnitConnection

log = logging.getLogger("authgate.storage")


class PostgresStore(SqlRepositories):
    """The repositories on one pool (:mod:`authgate.adapters.sql`), with readiness and
    shutdown. An operation during an outage raises (``OSError``, asyncpg's errors or
    ``TimeoutError``); the pool serves again once the server is back."""

    def __init__(self, pool: ConnectionPool, **options: Unpack[StoreOptions]) -> None:
        super().__init__(PoolDb(pool), POSTGRES, **options)
        self.pool = pool
        # A unit that only reads is an ordinary one (.unit: its plain reads take no lock).
        opener = functools.partial(UnitConnection, pool)
        self.units = SqlUnitOfWork(self, POSTGRES, opener, opener)

    async def housekeeping_idle(self) -> None:
        """Wait for running background purges (tests use it to observe their effect)."""
        for purging in self.purging():
            await purging.housekeeping.wait()

    async def close(self, grace: float = 10.0) -> None:
        """Stop background purges and close the pool (forcibly after ``grace`` seconds)."""
        for purging in self.purging():
            await purging.housekeeping.close()
        try:
            await asyncio.wait_for(self.pool.close(), grace)
        except TimeoutError:
            log.warning("closing the PostgreSQL pool timed out; terminating its connections")
            self.pool.terminate()


async def open_postgres(
    url: str,
    min_size: int = 1,
    max_size: int = 10,
    timeout: float = 5.0,  # noqa: ASYNC109 - a setting passed to the pool, not a deadline
    *,
    check: bool = True,
    asyncpg_pool: bool = False,
    **options: Unpack[StoreOptions],
) -> PostgresStore:
    """The adapters on a pool on ``url`` (``postgresql://user:pass@host:port/db``), the schema
    checked first (``check``); ``timeout`` bounds connecting and every command;
    ``asyncpg_pool``: asyncpg's pool instead of ours. Raises
    :class:`~.errors.DatabaseUnavailable` for an unreachable server."""
    opener = open_asyncpg_pool if asyncpg_pool else open_pool
    try:
        pool = await opener(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            server_settings={"application_name": "authgate"},
        )
    except CONNECT_ERRORS as e:
        raise unavailable(url, e) from e
    try:
        if check:
            await check_schema(pool)
    except BaseException:
        await pool.close()
        raise
    return PostgresStore(pool, **options)
