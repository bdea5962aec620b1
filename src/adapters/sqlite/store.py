"""The embedded store: the SQLite adapters on one file, opened and closed as a unit."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import random
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiosqlite

from authgate.adapters.bound_repositories import BoundRepositories, RepositoryMakers
from authgate.adapters.files import create_private_file, warn_if_exposed

from . import events, housekeeping, schema
from .accounts import SqliteAccounts
from .authorization import (
    SqliteAuthorizationCodes,
    SqliteGrants,
    SqliteRefreshTokens,
    SqliteSessionClients,
)
from .db import BUSY_TIMEOUT_MS, Database
from .events import SqliteEvents
from .outbox import SqliteLogoutOutbox
from .passkeys import SqlitePasskeyChallenges, SqlitePasskeys
from .provider_tokens import SqliteProviderTokens, SqliteRevocationOutbox
from .seen_events import SqliteSeenEvents
from .sessions import SqliteSessionRecords
from .state import SqliteStates

log = logging.getLogger("authgate.storage")


class SqliteUnavailable(Exception):
    """The database file cannot be opened or initialised (one line, naming the file)."""


class SqliteStore:
    """The accounts, state and event adapters on one SQLite connection (``db``: the
    connection and its lock, for diagnostics and tests)."""

    def __init__(
        self,
        db: Database,
        *,
        path: str,
        event_retention: dt.timedelta = events.DEFAULT_RETENTION,
        purge_interval: dt.timedelta = housekeeping.DEFAULT_PURGE_INTERVAL,
        ping_timeout: float = 1.0,
    ) -> None:
        self.path = path
        self.db = db
        self.accounts = SqliteAccounts(db)
        self.states = SqliteStates(db, purge_interval)
        self.events = SqliteEvents(db, event_retention, purge_interval)
        self.sessions = SqliteSessionRecords(db, purge_interval)
        self.provider_tokens = SqliteProviderTokens(db)
        self.revocations = SqliteRevocationOutbox(db)
        self.authorization_codes = SqliteAuthorizationCodes(db, purge_interval)
        self.refresh_tokens = SqliteRefreshTokens(db, purge_interval)
        self.grants = SqliteGrants(db)
        self.session_clients = SqliteSessionClients(db, purge_interval)
        self.logout_outbox = SqliteLogoutOutbox(db)
        self.passkeys = SqlitePasskeys(db)
        self.passkey_challenges = SqlitePasskeyChallenges(db, purge_interval)
        self.units = SqliteUnitOfWork(
            db,
            self.events,
            self.sessions,
            authorization_codes=self.authorization_codes,
            refresh_tokens=self.refresh_tokens,
            session_clients=self.session_clients,
        )
        self._ping_timeout = ping_timeout

    async def ping(self) -> None:
        """Readiness: the file answers a query within the ping timeout; raises otherwise."""
        async with asyncio.timeout(self._ping_timeout), self.db.use() as conn:
            await conn.execute_fetchall("SELECT 1")

    async def close(self) -> None:
        await self.db.close()


class SqliteUnitOfWork:
    """:class:`~authgate.ports.unit_of_work.UnitOfWork`: the file's one connection in one
    ``BEGIN IMMEDIATE`` transaction for the block."""

    def __init__(
        self,
        db: Database,
        events: SqliteEvents,
        sessions: SqliteSessionRecords,
        *,
        authorization_codes: SqliteAuthorizationCodes,
        refresh_tokens: SqliteRefreshTokens,
        session_clients: SqliteSessionClients,
    ) -> None:
        self._db = db
        self._makers: RepositoryMakers[Database] = RepositoryMakers(
            accounts=SqliteAccounts,
            events=events.bound,
            sessions=sessions.bound,
            seen_events=SqliteSeenEvents,
            provider_tokens=SqliteProviderTokens,
            revocations=SqliteRevocationOutbox,
            authorization_codes=authorization_codes.bound,
            refresh_tokens=refresh_tokens.bound,
            grants=SqliteGrants,
            session_clients=session_clients.bound,
            logout_outbox=SqliteLogoutOutbox,
            passkeys=SqlitePasskeys,
        )

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[BoundRepositories[Database]]:
        async with self._db.unit() as bound:
            yield self._repositories(bound)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[BoundRepositories[Database]]:
        """A unit that only reads: a deferred transaction (a snapshot of the file, no write
        lock), writes refused (``query_only``); a check of a token never waits behind
        another process's writer."""
        async with self._db.reading() as bound:
            yield self._repositories(bound)

    def _repositories(self, bound: Database) -> BoundRepositories[Database]:
        return BoundRepositories(self._makers, bound)


async def _use_wal(conn: aiosqlite.Connection) -> None:
    # Switching a new file to WAL needs an exclusive lock and SQLite answers "database is
    # locked" at once, without its busy handler, when another process is opening the file
    # at the same moment: retry for as long as the busy timeout. The mode then persists.
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            await conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.005 + random.random() * 0.02)  # noqa: S311 - jitter, not a secret


async def open_sqlite(
    path: str | os.PathLike[str],
    *,
    event_retention: dt.timedelta = events.DEFAULT_RETENTION,
    purge_interval: dt.timedelta = housekeeping.DEFAULT_PURGE_INTERVAL,
    ping_timeout: float = 1.0,
) -> SqliteStore:
    """Open (creating it 0600 and its parent folders 0700 on first start) the SQLite file at
    ``path``, bring its schema up to date and return the adapters on it. ``":memory:"`` gives a
    private in-memory database. Raises :class:`SqliteUnavailable` with a one-line reason."""
    where = os.fspath(path)
    try:
        if where not in (":memory:", ""):
            # The file holds PKCE verifiers, nonces, emails and audit data: create it (and its
            # folders) owner-only before SQLite opens it; SQLite gives the -wal, -shm and
            # -journal files the database file's mode.
            fd = create_private_file(where)
            if fd is None:
                warn_if_exposed(where, "the SQLite database")
            else:
                os.close(fd)
        conn = await aiosqlite.connect(where, isolation_level=None)
    except (OSError, sqlite3.Error) as e:
        raise SqliteUnavailable(f"cannot open the SQLite database {where}: {e}") from e
    try:
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
        await _use_wal(conn)
        await conn.execute("PRAGMA synchronous = NORMAL")  # durable with WAL except power loss
        await conn.execute("PRAGMA foreign_keys = ON")
        applied = await schema.apply(conn)
    except BaseException as e:
        await conn.close()
        if isinstance(e, sqlite3.Error | schema.SchemaTooNew):
            raise SqliteUnavailable(f"cannot use the SQLite database {where}: {e}") from e
        raise
    if applied:
        log.info("SQLite database %s: schema version %d applied", where, applied[-1])
    return SqliteStore(
        Database(conn),
        path=where,
        event_retention=event_retention,
        purge_interval=purge_interval,
        ping_timeout=ping_timeout,
    )
