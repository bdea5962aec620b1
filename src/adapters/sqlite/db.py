"""One aiosqlite connection shared by the SQL repositories (:mod:`authgate.adapters.sql`),
their ``$1``-numbered parameters spelled as SQLite's ``?1``, and SQLite's spelling of them:
times as ISO text in UTC with microseconds (which sorts and compares like the times), scopes
space-separated, other lists as JSON, no row locks (one writer at a time has the file), purges
inline."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import json
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite

from authgate.adapters.sql.engine import Db, Dialect

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


class SqliteDialect(Dialect):
    """:class:`~authgate.adapters.sql.engine.Dialect` of SQLite (aiosqlite)."""

    def time(self, value: dt.datetime) -> object:
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).isoformat(timespec="microseconds")

    def read_time(self, value: Any) -> dt.datetime:
        return dt.datetime.fromisoformat(value)

    def scopes(self, values: Sequence[str]) -> object:
        return " ".join(values)

    def read_scopes(self, value: Any) -> list[str]:
        return str(value).split()

    def strings(self, values: Sequence[str]) -> object:
        return json.dumps(list(values))

    def read_strings(self, value: Any) -> list[str]:
        return list(json.loads(value))

    def batch_delete(self, table: str, column: str, condition: str) -> str:
        # SQLite evaluates an uncorrelated IN sub-select once, before deleting: at most $2 rows
        # per statement, the oldest first through the column's index.
        return (
            f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} "  # noqa: S608
            f"WHERE {condition} ORDER BY {column} LIMIT $2)"
        )

    def claim(self, table: str, columns: Sequence[str]) -> str:
        # At most $3 rows: the IN sub-select runs once (into a transient index) before
        # updating, and one writer at a time has the file.
        return f"""
            UPDATE {table} SET leased_until = $2
            WHERE id IN (
                SELECT id FROM {table}
                WHERE next_attempt_at <= $1 AND (leased_until IS NULL OR leased_until <= $1)
                ORDER BY next_attempt_at, id LIMIT $3
            )
            RETURNING {", ".join(columns)}
            """  # noqa: S608 - the names of the outbox

    # In one statement (a write: under the file's write lock, so each is taken once).
    take_expired = (
        "DELETE FROM oauth_session_clients WHERE rowid IN (SELECT sc.rowid "
        "FROM sessions AS s JOIN oauth_session_clients AS sc ON sc.session_id = s.id "
        "WHERE s.expires_at <= $1 AND s.revoked_at IS NULL ORDER BY s.expires_at "
        "LIMIT $2) RETURNING session_id, client_id, account_id, first_at, expires_at"
    )

    def is_unique_violation(self, error: BaseException) -> bool:
        text = str(error)
        return isinstance(error, sqlite3.IntegrityError) and (
            "UNIQUE" in text or "PRIMARY KEY" in text
        )

    def is_foreign_key_violation(self, error: BaseException) -> bool:
        return isinstance(error, sqlite3.IntegrityError) and "FOREIGN KEY" in str(error)

    def is_identity_race(self, error: BaseException) -> bool:
        return self.is_unique_violation(error) and "identities." in str(error)


SQLITE = SqliteDialect()
"""The dialect's one instance."""
