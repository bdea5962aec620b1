"""Clean-up without a cron: traffic triggers it, at most once per interval, in the background.

Each instance purges on its own schedule; concurrent purges by several instances are harmless
(they delete the same expired rows, whichever runs first wins). A failed purge is logged and
retried at the next trigger after the interval; it never fails the operation that triggered it.

A purge deletes in batches of at most :data:`PURGE_BATCH` rows, each batch one short statement
committed on its own, until a batch finds fewer: however large the backlog (after an outage, a
shorter retention on a large table), every statement stays far below the statement timeout,
and what was deleted stays deleted when a later batch fails. One DELETE of everything expired
took about a second per million rows; past the timeout it would fail at every run and the
backlog would only grow.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import ClassVar

from authgate.adapters.sql_rows import Purged

from . import rows
from .pool import ConnectionPool

log = logging.getLogger("authgate.storage")

PURGE_BATCH = 1_000
"""Rows one purge statement deletes at most: 5 to 15 ms on a loaded two-core machine, far below
any sensible statement timeout; a million-row backlog takes a thousand such statements, some
seconds of background work, and requests get the connection between them."""

DEFAULT_PURGE_INTERVAL = dt.timedelta(minutes=5)
"""How often, at most, a repository's writes trigger its purge unless configured."""


def _batch_delete(table: str, column: str, op: str, also: str | None = None) -> str:
    # The inner select runs once per statement (an uncorrelated ARRAY(…) is computed before
    # the DELETE scans anything), so one statement deletes at most $2 rows, the oldest first
    # through the column's index, found again by their row address. The condition is repeated
    # outside: a row changed by another transaction since the select (a pending sign-in
    # replaced by its browser) is checked again in its new version and stays unless still
    # expired. No row lock up front: it doubled the statement's cost, and a purge meeting
    # another purge's rows waits for that statement's few milliseconds and finds them gone.
    condition = f"{column} {op} $1" if also is None else f"{column} {op} $1 AND {also}"
    return (
        f"DELETE FROM {table} WHERE ctid = ANY(ARRAY("  # noqa: S608 - names of this module
        f"SELECT ctid FROM {table} WHERE {condition} ORDER BY {column} LIMIT $2"
        f")) AND {condition}"
    )


# What a purge removes from each table: rows expired at, or older than, the bound ($1).
_BATCH_DELETES: dict[Purged, str] = {
    "sign_in_states": _batch_delete("sign_in_states", "expires_at", "<="),
    # A session that expired unrevoked stays until its clients were taken to be told
    # (``take_expired``): purging it first would lose whom to tell.
    "sessions": _batch_delete(
        "sessions",
        "expires_at",
        "<=",
        "(revoked_at IS NOT NULL OR NOT EXISTS (SELECT 1 FROM oauth_session_clients AS sc "
        "WHERE sc.session_id = sessions.id))",
    ),
    "provider_event_ids": _batch_delete("provider_event_ids", "expires_at", "<="),
    "sign_in_events": _batch_delete("sign_in_events", "at", "<"),
    "oauth_codes": _batch_delete("oauth_codes", "expires_at", "<="),
    "oauth_refresh_tokens": _batch_delete("oauth_refresh_tokens", "expires_at", "<="),
    "oauth_token_families": _batch_delete("oauth_token_families", "expires_at", "<="),
    "oauth_session_clients": _batch_delete("oauth_session_clients", "expires_at", "<="),
    "passkey_challenges": _batch_delete("passkey_challenges", "expires_at", "<="),
}


async def delete_batch(
    db: rows.Executor, table: Purged, bound: dt.datetime, batch: int = PURGE_BATCH
) -> int:
    """Delete at most ``batch`` of the rows of ``table`` expired at ``bound`` (sign-in
    events: older than ``bound``), the oldest first; the number deleted."""
    return rows.affected(await db.execute(_BATCH_DELETES[table], rows.utc(bound), batch))


async def delete_batches(
    db: rows.Executor, table: Purged, bound: dt.datetime, batch: int = PURGE_BATCH
) -> AsyncIterator[int]:
    """:func:`delete_batch` again and again, each statement on its own (on a pool: its own
    transaction, and other work gets the connection in between), yielding each count, until
    a batch deletes fewer than ``batch`` rows."""
    while True:
        deleted = await delete_batch(db, table, bound, batch)
        yield deleted
        if deleted < batch:
            return


async def total(batches: AsyncIterator[int]) -> int:
    """The rows a purge deleted in all its batches."""
    return sum([n async for n in batches])


class PeriodicPurge:
    """Runs ``job`` in a background task when triggered and at least ``interval`` has passed.

    ``job`` yields the rows each of its batches deleted; a run logs one line with the total,
    the number of batches and the time taken (also when a batch failed: what was deleted
    before it stays deleted)."""

    def __init__(
        self, name: str, job: Callable[[], AsyncIterator[int]], interval: dt.timedelta
    ) -> None:
        self._name = name
        self._job = job
        self._interval = interval.total_seconds()
        self._due = 0.0  # the first trigger runs (a restarted instance catches up at once)
        self._task: asyncio.Task[None] | None = None

    def trigger(self) -> None:
        """Start a purge if one is due and none is running. Never blocks, never raises."""
        now = time.monotonic()
        if now < self._due or (self._task is not None and not self._task.done()):
            return
        self._due = now + self._interval
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        removed = batches = 0
        started = time.monotonic()
        try:
            async for deleted in self._job():
                removed += deleted
                batches += 1
        except Exception as e:  # the database may be down: try again next interval
            log.warning(
                "purge of %s failed after %d rows in %d batches (%.2f s): %s: %s",
                self._name,
                removed,
                batches,
                time.monotonic() - started,
                type(e).__name__,
                e,
            )
        else:
            if removed:
                log.info(
                    "purged %d %s in %d batches (%.2f s)",
                    removed,
                    self._name,
                    batches,
                    time.monotonic() - started,
                )

    async def wait(self) -> None:
        """Wait for a running purge to finish (for tests and an orderly close)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None


class Purging(rows.Bindable):
    """A repository on the pool whose writes trigger a purge of its expired rows at most once
    per interval (:class:`PeriodicPurge`, its log naming them ``_purged``), run on the pool in
    the background; ``bound`` copies share the schedule and the time of the last write."""

    _purged: ClassVar[str]

    def __init__(
        self, pool: ConnectionPool, purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL
    ) -> None:
        super().__init__(pool)
        self._owner = self
        self._last_now: dt.datetime | None = None
        self.housekeeping = PeriodicPurge(self._purged, self._purge, purge_interval)

    def written(self, now: dt.datetime) -> None:
        """After a row was written (here or in a statement of its unit of work's) at ``now``:
        the purge of the rows expired by then, when due."""
        self._owner._last_now = rows.utc(now)
        self.housekeeping.trigger()

    async def purge_expired(self, now: dt.datetime) -> int:
        return await total(self._expired(now))

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        """The purge's batches: the rows expired at ``now``."""
        raise NotImplementedError

    async def _purge(self) -> AsyncIterator[int]:
        if self._last_now is not None:
            async for deleted in self._expired(self._last_now):
                yield deleted
