"""Clean-up without a cron: writes trigger it, at most once per interval; in the background
on PostgreSQL (concurrent purges by several instances are harmless), inline on SQLite (a local
DELETE on an indexed column is cheap). A failed purge is logged and retried after the
interval; it never fails the operation that triggered it.

A purge deletes in batches of at most :data:`PURGE_BATCH` rows, each one short statement
committed on its own, until a batch finds fewer: every statement stays far below the statement
timeout, what was deleted stays deleted when a later batch fails, and other work gets the
connection (and SQLite's write lock) between batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import ClassVar, Literal, Self, TypeVar, get_args

from .engine import Db, Dialect, Row

log = logging.getLogger("authgate.storage")

PURGE_BATCH = 1_000
"""Rows one purge statement deletes at most."""

DEFAULT_PURGE_INTERVAL = dt.timedelta(minutes=5)
"""How often, at most, a repository's writes trigger its purge unless configured."""

Purged = Literal[
    "sign_in_states",
    "sessions",
    "provider_event_ids",
    "sign_in_events",
    "oauth_codes",
    "oauth_refresh_tokens",
    "oauth_token_families",
    "oauth_session_clients",
    "passkey_challenges",
    "oauth_revoked_tokens",
]
"""The tables whose expired rows a purge deletes."""

# What a purge removes from each table: rows expired at, or older than, the bound ($1),
# oldest first by the column the condition starts with.
_EXPIRED: dict[Purged, str] = dict.fromkeys(get_args(Purged), "expires_at <= $1") | {
    "sign_in_events": "at < $1",
    # A session that expired unrevoked stays until its clients were taken to be told
    # (``take_expired``): purging it first would lose whom to tell.
    "sessions": "expires_at <= $1 AND (revoked_at IS NOT NULL OR NOT EXISTS "
    "(SELECT 1 FROM oauth_session_clients AS sc WHERE sc.session_id = sessions.id))",
}


@functools.cache
def _batch_delete(sql: Dialect, table: Purged) -> str:
    condition = _EXPIRED[table]
    return sql.batch_delete(table, condition.split()[0], condition)


async def delete_batch(
    db: Db, sql: Dialect, table: Purged, bound: dt.datetime, batch: int = PURGE_BATCH
) -> int:
    """Delete at most ``batch`` of the rows of ``table`` expired at ``bound`` (sign-in
    events: older than ``bound``), the oldest first; the number deleted."""
    return await db.execute(_batch_delete(sql, table), sql.time(bound), batch)


async def delete_batches(
    db: Db, sql: Dialect, table: Purged, bound: dt.datetime, batch: int = PURGE_BATCH
) -> AsyncIterator[int]:
    """:func:`delete_batch` until one deletes fewer than ``batch`` rows, yielding each count."""
    while True:
        deleted = await delete_batch(db, sql, table, bound, batch)
        yield deleted
        if deleted < batch:
            return


Job = Callable[[], AsyncIterator[int]]


class PeriodicPurge:
    """Runs a purge when triggered and at least ``interval`` has passed: :meth:`trigger` in a
    background task, :meth:`run_if_due` in the caller's. The job yields each batch's count; a
    run logs one line (rows, batches, seconds), also when a batch failed."""

    def __init__(self, name: str, job: Job | None, interval: dt.timedelta) -> None:
        self._name = name
        self._job = job
        self._interval = interval.total_seconds()
        self._due = 0.0  # the first trigger runs (a restarted instance catches up at once)
        self._task: asyncio.Task[None] | None = None

    def _is_due(self) -> bool:
        now = time.monotonic()
        if now < self._due or (self._task is not None and not self._task.done()):
            return False
        self._due = now + self._interval
        return True

    def trigger(self, job: Job | None = None) -> None:
        """Start a purge if one is due and none is running. Never blocks, never raises."""
        run = job or self._job
        if run is not None and self._is_due():
            self._task = asyncio.get_running_loop().create_task(self._run(run))

    async def run_if_due(self, job: Job) -> None:
        """Run the purge now if one is due. Never raises."""
        if self._is_due():
            await self._run(job)

    async def _run(self, job: Job) -> None:
        removed = batches = 0
        started = time.monotonic()
        try:
            async for deleted in job():
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
        """Cancel a running purge."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None


_T = TypeVar("_T")


def shallow_copy(obj: _T) -> _T:
    """``copy.copy`` of a plain object, without ``copy``'s ``__reduce_ex__`` round: a
    repository bound to a unit of work is made per sign-in."""
    copied: _T = object.__new__(type(obj))
    copied.__dict__.update(obj.__dict__)
    return copied


def utc(value: dt.datetime) -> dt.datetime:
    """An aware datetime; a naive one is taken as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


class Repository:
    """A repository whose statements run on ``_db`` (the store's connections, or one unit of
    work's: :meth:`bound`) in the engine's dialect ``_sql``."""

    def __init__(self, db: Db, sql: Dialect) -> None:
        self._db = db
        self._sql = sql

    def bound(self, db: Db) -> Self:
        """The same repository through ``db`` (a unit of work's), sharing all else it holds
        (a purge's schedule)."""
        bound = shallow_copy(self)
        bound._db = db
        return bound

    async def _of_account(self, account_id: str, query: str, read: Callable[[Row], _T]) -> list[_T]:
        """``read`` of each row ``query`` finds for the account (``$1``); none for an id that
        cannot be an account's."""
        key = self._sql.account_key(account_id)
        return [] if key is None else [read(r) for r in await self._db.fetch(query, key)]


async def total(batches: AsyncIterator[int]) -> int:
    """The rows a purge deleted in all its batches."""
    return sum([n async for n in batches])


class Purging(Repository):
    """A repository whose writes trigger a purge of its expired rows (``_purged`` in the log)
    at most once per interval, inline or not as :attr:`Dialect.purge_inline` says; ``bound``
    copies share the schedule."""

    _purged: ClassVar[str]

    def __init__(
        self, db: Db, sql: Dialect, purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL
    ) -> None:
        super().__init__(db, sql)
        self._owner = self
        self.housekeeping = PeriodicPurge(self._purged, None, purge_interval)

    async def written(self, now: dt.datetime) -> None:
        """After a row was written at ``now``: the purge of the rows expired by then, if due."""
        if self._sql.purge_inline:
            await self.housekeeping.run_if_due(lambda: self._expired(now))
        else:
            owner = self._owner
            self.housekeeping.trigger(lambda: owner._expired(now))

    async def purge_expired(self, now: dt.datetime) -> int:
        return await total(self._expired(now))

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        raise NotImplementedError

    def _batches(self, table: Purged, bound: dt.datetime) -> AsyncIterator[int]:
        return delete_batches(self._db, self._sql, table, bound)
