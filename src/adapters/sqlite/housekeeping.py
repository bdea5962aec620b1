"""Clean-up without a cron for the embedded store: traffic triggers it at most once per
interval. A local DELETE on an indexed column is cheap, so it runs inline, after the operation
that triggered it has committed; a failure is logged and never fails that operation.

It deletes in batches of at most :data:`PURGE_BATCH` rows, each its own statement with the
connection given back in between: one DELETE of a large backlog would hold the file's write
lock (other processes wait, up to their busy timeout) and this process's connection until done.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable
from typing import ClassVar, Self

import aiosqlite

from authgate.adapters.sql_rows import Purged

from .db import Database, ts

log = logging.getLogger("authgate.storage")

PURGE_BATCH = 1_000
"""Rows one purge statement deletes at most (a few milliseconds)."""

DEFAULT_PURGE_INTERVAL = dt.timedelta(minutes=5)
"""How often, at most, a repository's writes trigger its purge unless configured."""


# What a purge removes from each table: rows expired at, or older than, the bound (the first
# parameter), the oldest first through the column's index. SQLite evaluates an uncorrelated IN
# sub-select once, before deleting: at most the second parameter's rows per statement.
_BATCH_DELETES: dict[Purged, str] = {
    "sign_in_states": "DELETE FROM sign_in_states WHERE rowid IN (SELECT rowid FROM "
    "sign_in_states WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)",
    # A session that expired unrevoked stays until its clients were taken to be told
    # (``take_expired``): purging it first would lose whom to tell.
    "sessions": "DELETE FROM sessions WHERE rowid IN (SELECT rowid FROM sessions "
    "WHERE expires_at <= ?1 AND (revoked_at IS NOT NULL OR NOT EXISTS (SELECT 1 FROM "
    "oauth_session_clients AS sc WHERE sc.session_id = sessions.id)) "
    "ORDER BY expires_at LIMIT ?2)",
    "provider_event_ids": "DELETE FROM provider_event_ids WHERE rowid IN (SELECT rowid FROM "
    "provider_event_ids WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)",
    "sign_in_events": "DELETE FROM sign_in_events WHERE rowid IN (SELECT rowid FROM "
    "sign_in_events WHERE at < ?1 ORDER BY at LIMIT ?2)",
    "oauth_codes": "DELETE FROM oauth_codes WHERE rowid IN (SELECT rowid FROM oauth_codes "
    "WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)",
    "oauth_refresh_tokens": "DELETE FROM oauth_refresh_tokens WHERE rowid IN (SELECT rowid FROM "
    "oauth_refresh_tokens WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)",
    "oauth_token_families": "DELETE FROM oauth_token_families WHERE rowid IN (SELECT rowid FROM "
    "oauth_token_families WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)",
    "oauth_session_clients": "DELETE FROM oauth_session_clients WHERE rowid IN (SELECT rowid "
    "FROM oauth_session_clients WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)",
    "passkey_challenges": "DELETE FROM passkey_challenges WHERE rowid IN (SELECT rowid FROM "
    "passkey_challenges WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)",
}


async def delete_batch(
    conn: aiosqlite.Connection, table: Purged, bound: dt.datetime, batch: int = PURGE_BATCH
) -> int:
    """Delete at most ``batch`` of the rows of ``table`` expired at ``bound`` (sign-in
    events: older than ``bound``), the oldest first; the number deleted."""
    cursor = await conn.execute(_BATCH_DELETES[table], (ts(bound), batch))
    return cursor.rowcount


async def delete_batches(
    db: Database, table: Purged, bound: dt.datetime, batch: int = PURGE_BATCH
) -> int:
    """:func:`delete_batch` until a batch deletes fewer than ``batch`` rows, the connection
    given back between batches (other operations queued for it run in between); the total."""
    removed = 0
    while True:
        async with db.use() as conn:
            deleted = await delete_batch(conn, table, bound, batch)
        removed += deleted
        if deleted < batch:
            return removed


class PeriodicPurge:
    def __init__(self, name: str, interval: dt.timedelta) -> None:
        self._name = name
        self._interval = interval.total_seconds()
        self._due = 0.0  # the first trigger runs

    async def maybe_run(self, job: Callable[[], Awaitable[int]]) -> None:
        now = time.monotonic()
        if now < self._due:
            return
        self._due = now + self._interval
        try:
            removed = await job()
        except Exception as e:
            log.warning("purge of %s failed: %s: %s", self._name, type(e).__name__, e)
        else:
            if removed:
                log.info("purged %d %s", removed, self._name)


class Purging:
    """A repository on ``_db`` whose writes purge its expired rows at most once per interval
    (:class:`PeriodicPurge`, its log naming them ``_purged``); the copies ``bound`` makes for
    a unit of work share the schedule."""

    _purged: ClassVar[str]

    def __init__(
        self,
        db: Database,
        purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL,
        housekeeping: PeriodicPurge | None = None,
    ) -> None:
        self._db = db
        self.housekeeping = housekeeping or PeriodicPurge(self._purged, purge_interval)

    def bound(self, db: Database) -> Self:
        """The same repository through ``db`` (a unit of work's), sharing the purge schedule."""
        return type(self)(db, housekeeping=self.housekeeping)
