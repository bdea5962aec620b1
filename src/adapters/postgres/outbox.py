"""An outbox in PostgreSQL, shared by every instance, whatever its rows hold: a subclass names
its table and columns and converts its rows (:class:`PostgresOutbox`)."""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar, Generic

import asyncpg

from authgate.adapters import sql_rows
from authgate.domain.openid.logout import PendingLogout
from authgate.ports.outbox import P

from . import rows


class PostgresOutbox(rows.Bindable, Generic[P]):
    """:class:`~authgate.ports.outbox.Outbox` in a table with the columns ``_columns`` (``id``
    first) and ``leased_until`` and ``last_error``, on a pool or on one connection of a unit of
    work (:meth:`bound`; there ``add`` waits to be sent with the unit's other writes). A claim
    locks at most ``limit`` due rows ``FOR UPDATE SKIP LOCKED`` and leases them in one
    statement, so concurrent instances claim disjoint rows."""

    _table: ClassVar[str]
    _columns: ClassVar[tuple[str, ...]]
    _insert: ClassVar[str]
    _due: ClassVar[str]
    _claim: ClassVar[str]
    _select: ClassVar[str]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        columns = ", ".join(cls._columns)
        marks = ", ".join(f"${i}" for i in range(1, len(cls._columns) + 1))
        table = cls._table
        cls._insert = f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608
        claimable = "next_attempt_at <= $1 AND (leased_until IS NULL OR leased_until <= $1)"
        cls._due = f"SELECT EXISTS (SELECT 1 FROM {table} WHERE {claimable})"  # noqa: S608
        # Bounded by construction, whatever the plan: a MATERIALIZED WITH query runs once per
        # statement and its rows are kept; a plan that re-scans it (a nested loop re-scans
        # its inner side for every outer row) re-reads those rows. A sub-select in FROM or
        # IN is re-run instead, and each re-run skips the rows this statement has already
        # updated and locks the next ones: a claim of 2 leased 5. So at most $3 distinct ids,
        # each matching one row by the primary key. MATERIALIZED, as a single-use WITH query
        # may otherwise be folded into the statement as that very sub-select.
        returned = ", ".join(f"r.{c}" for c in cls._columns)
        cls._claim = f"""
            WITH due AS MATERIALIZED (
                SELECT id FROM {table}
                WHERE {claimable}
                ORDER BY next_attempt_at, id LIMIT $3
                FOR UPDATE SKIP LOCKED
            )
            UPDATE {table} AS r SET leased_until = $2
            FROM due
            WHERE r.id = due.id
            RETURNING {returned}
            """  # noqa: S608 - the names of the subclass
        cls._select = f"SELECT {columns} FROM {table} ORDER BY created_at, id"  # noqa: S608

    def _values(self, pending: P) -> tuple[Any, ...]:
        """The row's values in the order of ``_columns``."""
        raise NotImplementedError

    def _pending(self, row: asyncpg.Record) -> P:
        """The row read back."""
        raise NotImplementedError

    async def add(self, pending: P) -> None:
        await rows.write(self._db, self._insert, *self._values(pending))

    async def due(self, now: dt.datetime) -> bool:
        return bool(await self._db.fetchval(self._due, rows.utc(now)))

    async def claim(self, now: dt.datetime, lease: dt.timedelta, limit: int) -> list[P]:
        found = await self._db.fetch(self._claim, rows.utc(now), rows.utc(now + lease), limit)
        return sorted((self._pending(r) for r in found), key=lambda p: (p.next_attempt_at, p.id))

    async def complete(self, pending_id: str) -> None:
        await self._db.execute(f"DELETE FROM {self._table} WHERE id = $1", pending_id)  # noqa: S608

    async def retry(
        self, pending_id: str, attempts: int, next_attempt_at: dt.datetime, error: str
    ) -> None:
        await self._db.execute(
            f"UPDATE {self._table} SET attempts = $1, next_attempt_at = $2, "  # noqa: S608
            "leased_until = NULL, last_error = $3 WHERE id = $4",
            attempts,
            rows.utc(next_attempt_at),
            error,
            pending_id,
        )

    async def pending(self) -> list[P]:
        return [self._pending(r) for r in await self._db.fetch(self._select)]


class PostgresLogoutOutbox(PostgresOutbox[PendingLogout]):
    """:class:`~authgate.ports.openid.LogoutOutbox` (``backchannel_logouts``, migration
    ``0009_backchannel_logouts``)."""

    _table = sql_rows.LOGOUT_OUTBOX
    _columns = sql_rows.LOGOUT_COLUMNS

    def _values(self, pending: PendingLogout) -> tuple[Any, ...]:
        return sql_rows.logout_values(pending, rows.utc)

    def _pending(self, row: asyncpg.Record) -> PendingLogout:
        return sql_rows.pending_logout(row, rows.utc)
