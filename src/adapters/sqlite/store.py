"""The embedded store: the SQLite adapters on one file, opened and closed as a unit."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sqlite3
import time
from typing import Unpack

import aiosqlite

from authgate.adapters.files import create_private_file, warn_if_exposed
from authgate.adapters.sql.store import SqlRepositories, SqlUnitOfWork, StoreOptions

from . import schema
from .db import BUSY_TIMEOUT_MS, SQLITE, Database

log = logging.getLogger("authgate.storage")


class SqliteUnavailable(Exception):
    """The database file cannot be opened or initialised (one line, naming the file)."""


class SqliteStore(SqlRepositories):
    """The repositories (:mod:`authgate.adapters.sql`) on one SQLite connection (``db``: the
    connection and its lock, for diagnostics and tests)."""

    def __init__(self, db: Database, *, path: str, **options: Unpack[StoreOptions]) -> None:
        super().__init__(db, SQLITE, **options)
        self.path = path
        self.db = db
        # A unit of work: the file's one connection in one BEGIN IMMEDIATE transaction for
        # the block; a unit that only reads in a deferred transaction (a snapshot of the
        # file, no write lock), writes refused (query_only): a check of a token never waits
        # behind another process's writer.
        self.units = SqlUnitOfWork(self, SQLITE, db.unit, db.reading)

    async def close(self) -> None:
        await self.db.close()


SqliteUnitOfWork = SqlUnitOfWork
"""The unit of work of a :class:`SqliteStore`."""


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


async def open_sqlite(path: str | os.PathLike[str], **options: Unpack[StoreOptions]) -> SqliteStore:
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
        applied = await schema.apply(db := Database(conn))
    except BaseException as e:
        await conn.close()
        if isinstance(e, sqlite3.Error | schema.SchemaTooNew):
            raise SqliteUnavailable(f"cannot use the SQLite database {where}: {e}") from e
        raise
    if applied:
        log.info("SQLite database %s: schema version %d applied", where, applied[-1])
    return SqliteStore(db, path=where, **options)
