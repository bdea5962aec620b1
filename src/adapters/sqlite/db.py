"""One aiosqlite connection shared by the SQL repositories (:mod:`authgate.adapters.sql`),
their ``$1``-numbered parameters spelled as SQLite's ``?1``."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite

from authgate.adapters.sql.engine import Db

BUSY_TIMEOUT_MS = 5000

_PARAMETER = re.compile(r"\$(\d+)")


@functools.cache  # the texts are the repositories' few
def _sqlite(query: str) -> str:
    """``query`` with SQLite's numbered parameters."""
    return _PARAMETER.sub(r"?\1", query)


class Database(Db):
    """The connection and a lock that gives it to one operation at a time, so a transaction
    never interleaves with another coroutine's statements; a statement alone commits alone."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self._lock = asyncio.Lock()
        self._held = BoundDatabase(conn)

    async def execute(self, query: str, *args: object) -> int:
        async with self._lock:
            return await self._held.execute(query, *args)

    async def fetch(self, query: str, *args: object) -> Sequence[Any]:
        async with self._lock:
            return await self._held.fetch(query, *args)

    async def fetchrow(self, query: str, *args: object) -> Any:
        async with self._lock:
            return await self._held.fetchrow(query, *args)

    @asynccontextmanager
    async def use(self) -> AsyncIterator[aiosqlite.Connection]:
        """The connection, alone, for single statements (each commits on its own)."""
        async with self._lock:
            yield self.conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Db]:
        """The connection, alone, inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (the write lock up
        front: another process on the file waits up to ``busy_timeout`` instead of failing
        late); rolled back when anything fails or the task is cancelled."""
        async with self._lock:
            try:
                await self.conn.execute("BEGIN IMMEDIATE")
                yield self._held
                await self.conn.execute("COMMIT")
            except BaseException:
                # Statements run in order on aiosqlite's thread: a statement whose await was
                # cancelled still runs, and this ROLLBACK runs after it. When BEGIN itself
                # failed there is nothing to roll back.
                with contextlib.suppress(sqlite3.Error):
                    await self.conn.execute("ROLLBACK")
                raise

    atomic = transaction
    unit = transaction
    """A unit of work: the connection, alone, in one ``BEGIN IMMEDIATE`` transaction for the
    whole block, its repositories' own transactions savepoints (:class:`BoundDatabase`)."""

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[Db]:
        """A unit that only reads: the connection, alone, in one deferred transaction
        (``BEGIN``, a read snapshot of the WAL: it takes no write lock, so it neither waits
        for another process's writer nor holds one up) with ``query_only`` on, so that a
        write through it fails instead of quietly taking the write lock."""
        async with self._lock:
            await self.conn.execute("PRAGMA query_only = ON")
            try:
                await self.conn.execute("BEGIN DEFERRED")
                try:
                    yield self._held
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


class BoundDatabase(Db):
    """The connection inside an open transaction: its statements need no lock (the
    transaction holds it), and ``transaction`` is a savepoint, so a step that fails rolls back
    alone and the unit decides about the rest."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def execute(self, query: str, *args: object) -> int:
        return (await self.conn.execute(_sqlite(query), args)).rowcount

    async def fetch(self, query: str, *args: object) -> Sequence[Any]:
        return list(await self.conn.execute_fetchall(_sqlite(query), args))

    async def fetchrow(self, query: str, *args: object) -> Any:
        found = await self.fetch(query, *args)
        return found[0] if found else None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Db]:
        """A savepoint: the block's writes roll back alone."""
        await self.conn.execute("SAVEPOINT step")
        try:
            yield self
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                await self.conn.execute("ROLLBACK TO step")
                await self.conn.execute("RELEASE step")
            raise
        await self.conn.execute("RELEASE step")

    @asynccontextmanager
    async def atomic(self) -> AsyncIterator[Db]:
        yield self
