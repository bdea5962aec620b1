"""An idle outbox worker on SQLite writes nothing: its poll takes no write lock, so another
process holding the file's write lock (a long write, a migration, an operator's command)
never makes an idle instance's worker wait or fail."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from authgate.adapters.sqlite import SqliteStore, open_sqlite
from authgate.domain.openid.logout import PendingLogout
from authgate.ports.outbox import Outbox, P
from authgate.services.outbox import OutboxInUnits, OutboxPolicy, OutboxWorker
from tests.support.records import T0, at


class FixedClock:
    def __init__(self, now: dt.datetime) -> None:
        self.value = now

    def now(self) -> dt.datetime:
        return self.value


class Recorded(OutboxWorker[P]):
    """A worker whose attempt records the row and completes it."""

    def __init__(self, outbox: Outbox[P], clock: FixedClock) -> None:
        super().__init__(outbox=outbox, clock=clock, policy=OutboxPolicy())
        self.tried: list[str] = []

    async def attempt(self, pending: P) -> None:
        self.tried.append(pending.id)
        await self.outbox.complete(pending.id)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = await open_sqlite(tmp_path / "authgate.db")
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def write_locked(store: SqliteStore, tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection to the store's file (as another process's), holding nothing yet."""
    other = sqlite3.connect(tmp_path / "authgate.db", isolation_level=None, timeout=0.1)
    try:
        yield other
    finally:
        other.close()


def logout(rid: str, due: dt.datetime) -> PendingLogout:
    return PendingLogout(
        id=rid,
        client_id="webapp",
        account_id="acct-1",
        session_id=f"sid-{rid}",
        created_at=T0,
        next_attempt_at=due,
    )


async def _workers(store: SqliteStore, clock: FixedClock) -> list[Recorded[PendingLogout]]:
    return [
        Recorded(OutboxInUnits(store.units, lambda tx: tx.logout_outbox), clock),
        Recorded(store.revocations, clock),  # type: ignore[arg-type]
    ]


async def test_an_idle_poll_takes_no_write_lock(
    store: SqliteStore, write_locked: sqlite3.Connection
) -> None:
    workers = await _workers(store, FixedClock(at(10)))
    write_locked.execute("BEGIN IMMEDIATE")  # another process's writer holds the file
    try:
        for worker in workers:
            began = time.monotonic()
            assert await worker.run_once() == 0
            # No wait for the write lock (busy_timeout is 5 s), no "database is locked".
            assert time.monotonic() - began < 1.0
    finally:
        write_locked.execute("ROLLBACK")


async def test_a_due_row_is_claimed_and_tried_once_the_lock_is_free(
    store: SqliteStore, write_locked: sqlite3.Connection
) -> None:
    [logouts, _] = await _workers(store, FixedClock(at(10)))
    async with store.units.begin() as tx:
        await tx.logout_outbox.add(logout("l-1", due=at(5)))
        await tx.logout_outbox.add(logout("l-2", due=at(60)))
    write_locked.execute("BEGIN IMMEDIATE")
    attempt = asyncio.create_task(logouts.run_once())
    await asyncio.sleep(0.3)
    assert not attempt.done()  # a row is due: the claim waits for the writer
    write_locked.execute("ROLLBACK")
    assert await asyncio.wait_for(attempt, 5) == 1
    assert logouts.tried == ["l-1"]
    assert [p.id for p in await store.logout_outbox.pending()] == ["l-2"]
