"""An outbox in SQLite, whatever its rows hold: a subclass names its table and columns and
converts its rows (:class:`SqliteOutbox`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, ClassVar, Generic

from authgate.adapters import sql_rows
from authgate.domain.openid.logout import PendingLogout
from authgate.ports.outbox import P

from .db import Database, parse_ts, ts


class SqliteOutbox(Generic[P]):
    """:class:`~authgate.ports.outbox.Outbox` in a SQLite table with the columns ``_columns``
    (``id`` first) and ``leased_until`` and ``last_error``: a claim is one UPDATE, serialised
    by SQLite's write lock across processes on the file."""

    _table: ClassVar[str]
    _columns: ClassVar[tuple[str, ...]]
    _insert: ClassVar[str]
    _due: ClassVar[str]
    _claim: ClassVar[str]
    _select: ClassVar[str]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        columns = ", ".join(cls._columns)
        marks = ", ".join("?" * len(cls._columns))
        table = cls._table
        cls._insert = f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608
        claimable = "next_attempt_at <= ? AND (leased_until IS NULL OR leased_until <= ?)"
        cls._due = f"SELECT EXISTS (SELECT 1 FROM {table} WHERE {claimable})"  # noqa: S608
        # At most ``limit`` rows: SQLite evaluates an uncorrelated IN sub-select once (into a
        # transient index) before updating, and one writer at a time has the file.
        cls._claim = f"""
            UPDATE {table} SET leased_until = ?
            WHERE id IN (
                SELECT id FROM {table}
                WHERE {claimable}
                ORDER BY next_attempt_at, id LIMIT ?
            )
            RETURNING {columns}
            """  # noqa: S608 - the names of the subclass
        cls._select = f"SELECT {columns} FROM {table} ORDER BY created_at, id"  # noqa: S608

    def __init__(self, db: Database) -> None:
        self._db = db

    def _values(self, pending: P) -> tuple[object, ...]:
        """The row's values in the order of ``_columns``."""
        raise NotImplementedError

    def _pending(self, row: Sequence[Any]) -> P:
        """The row read back (its columns in the order of ``_columns``)."""
        raise NotImplementedError

    async def add(self, pending: P) -> None:
        async with self._db.use() as conn:
            await conn.execute(self._insert, self._values(pending))

    async def due(self, now: dt.datetime) -> bool:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(self._due, (ts(now), ts(now)))
        return any(found for (found,) in rows)

    async def claim(self, now: dt.datetime, lease: dt.timedelta, limit: int) -> list[P]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                self._claim, (ts(now + lease), ts(now), ts(now), limit)
            )
        return sorted((self._pending(r) for r in rows), key=lambda p: (p.next_attempt_at, p.id))

    async def complete(self, pending_id: str) -> None:
        async with self._db.use() as conn:
            await conn.execute(f"DELETE FROM {self._table} WHERE id = ?", (pending_id,))  # noqa: S608

    async def retry(
        self, pending_id: str, attempts: int, next_attempt_at: dt.datetime, error: str
    ) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                f"UPDATE {self._table} SET attempts = ?, next_attempt_at = ?, "  # noqa: S608
                "leased_until = NULL, last_error = ? WHERE id = ?",
                (attempts, ts(next_attempt_at), error, pending_id),
            )

    async def pending(self) -> list[P]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(self._select)
        return [self._pending(r) for r in rows]


class SqliteLogoutOutbox(SqliteOutbox[PendingLogout]):
    """:class:`~authgate.ports.openid.LogoutOutbox` in a SQLite file (``backchannel_logouts``)."""

    _table = sql_rows.LOGOUT_OUTBOX
    _columns = sql_rows.LOGOUT_COLUMNS

    def _values(self, pending: PendingLogout) -> tuple[object, ...]:
        return sql_rows.logout_values(pending, ts)

    def _pending(self, row: Sequence[Any]) -> PendingLogout:
        return sql_rows.pending_logout(row, parse_ts)
