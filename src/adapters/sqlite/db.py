"""One aiosqlite connection shared by the SQLite adapters, and the conversions they share.

aiosqlite runs the connection on its own thread; an :class:`asyncio.Lock` gives each operation
the connection to itself, so a transaction never interleaves with another coroutine's
statements. Changes of several statements run in ``BEGIN IMMEDIATE`` (the write lock up
front: another process on the same file waits up to ``busy_timeout`` instead of failing late);
a unit that only reads runs in a deferred transaction (a WAL snapshot, no write lock).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiosqlite

BUSY_TIMEOUT_MS = 5000


class Database:
    """The connection and the lock that gives it to one operation at a time."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def use(self) -> AsyncIterator[aiosqlite.Connection]:
        """The connection, alone, for single statements (each commits on its own)."""
        async with self._lock:
            yield self.conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """The connection, alone, inside ``BEGIN IMMEDIATE`` … ``COMMIT``; rolled back when
        anything fails or the task is cancelled, so no transaction is ever left open."""
        async with self._lock:
            try:
                await self.conn.execute("BEGIN IMMEDIATE")
                yield self.conn
                await self.conn.execute("COMMIT")
            except BaseException:
                # Statements run in order on aiosqlite's thread: a statement whose await was
                # cancelled still runs, and this ROLLBACK runs after it. When BEGIN itself
                # failed there is nothing to roll back.
                with contextlib.suppress(sqlite3.Error):
                    await self.conn.execute("ROLLBACK")
                raise

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[Database]:
        """A unit of work: the connection, alone, in one ``BEGIN IMMEDIATE`` transaction for
        the whole block, handed out as a :class:`BoundDatabase` so that the adapters' own
        ``use`` and ``transaction`` run inside it."""
        async with self.transaction() as conn:
            yield BoundDatabase(conn)

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[Database]:
        """A unit that only reads: the connection, alone, in one deferred transaction
        (``BEGIN``, a read snapshot of the WAL: it takes no write lock, so it neither waits
        for another process's writer nor holds one up) with ``query_only`` on, so that a
        write through it fails instead of quietly taking the write lock."""
        async with self._lock:
            await self.conn.execute("PRAGMA query_only = ON")
            try:
                await self.conn.execute("BEGIN DEFERRED")
                try:
                    yield BoundDatabase(self.conn)
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        await self.conn.execute("ROLLBACK")
                    raise
                await self.conn.execute("COMMIT")  # ends the read snapshot; nothing to write
            finally:
                await self.conn.execute("PRAGMA query_only = OFF")

    async def close(self) -> None:
        async with self._lock:
            await self.conn.close()


class BoundDatabase(Database):
    """The connection inside a unit of work's open transaction: ``use`` needs no lock (the
    unit holds it) and ``transaction`` is a savepoint, so a step that fails rolls back alone
    and the unit decides about the rest."""

    @asynccontextmanager
    async def use(self) -> AsyncIterator[aiosqlite.Connection]:
        yield self.conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        await self.conn.execute("SAVEPOINT step")
        try:
            yield self.conn
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                await self.conn.execute("ROLLBACK TO step")
                await self.conn.execute("RELEASE step")
            raise
        await self.conn.execute("RELEASE step")

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[Database]:
        yield self

    async def close(self) -> None:
        raise RuntimeError("a unit of work's connection is closed with its store")


def utc(value: dt.datetime) -> dt.datetime:
    """An aware UTC datetime (naive is taken as UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def ts(value: dt.datetime) -> str:
    """A time as stored: UTC ISO 8601 with microseconds."""
    return utc(value).isoformat(timespec="microseconds")


def parse_ts(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value)


def parse_opt_ts(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value is not None else None
