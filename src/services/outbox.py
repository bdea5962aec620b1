"""The worker of an outbox (:class:`~authgate.ports.outbox.Outbox`), whatever its rows hold:
one task per running instance tries each row it claims once, then completes it or puts it back
for later (:meth:`OutboxPolicy.next_attempt`). A subclass says what an attempt is
(:meth:`OutboxWorker.attempt`) and how a row ends (:meth:`OutboxWorker.finish`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import random
from collections.abc import Callable
from typing import Generic

import attrs

from authgate.ports.clock import Clock
from authgate.ports.outbox import Outbox, P
from authgate.ports.unit_of_work import Transaction, UnitOfWork

log = logging.getLogger("authgate.outbox")


@attrs.frozen
class OutboxPolicy:
    """The configurable rules of an outbox's worker."""

    retry_initial: dt.timedelta = dt.timedelta(seconds=10)
    retry_max: dt.timedelta = dt.timedelta(hours=1)
    give_up_after: dt.timedelta = dt.timedelta(days=7)
    lease: dt.timedelta = dt.timedelta(seconds=60)
    poll_seconds: float = 5.0
    batch: int = 20

    def next_attempt(
        self, created_at: dt.datetime, attempts: int, now: dt.datetime
    ) -> dt.datetime | None:
        """When a row written at ``created_at`` whose ``attempts``-th attempt just failed is
        due again: after a wait doubling from ``retry_initial``, capped at ``retry_max``,
        shortened by up to a fifth at random so that rows failed together spread out (never
        lengthened: the cap holds). None when it is older than ``give_up_after``: given up."""
        if now - created_at >= self.give_up_after:
            return None
        base = min(
            self.retry_initial.total_seconds() * 2 ** min(attempts - 1, 40),
            self.retry_max.total_seconds(),
        )
        return now + dt.timedelta(seconds=base * (1 - 0.2 * random.random()))  # noqa: S311 - jitter


class OutboxWorker(Generic[P]):
    """Processes one outbox in the background (one task per running instance)."""

    name = "outbox worker"  # how its log lines name it
    log = log

    def __init__(self, *, outbox: Outbox[P], clock: Clock, policy: OutboxPolicy) -> None:
        self.outbox = outbox
        self.clock = clock
        self.policy = policy
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        """Rows were added and committed: look at once."""
        self._wake.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop the task; a row being tried stays leased and is tried again after its lease."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                while await self.run_once() == self.policy.batch:
                    pass  # a full batch: more may be due
            except Exception as e:  # the database may be down: try again next round
                log.warning("%s: %s: %s", self.name, type(e).__name__, e)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.policy.poll_seconds)

    async def run_once(self) -> int:
        """Claim the due rows and try each once; the number claimed."""
        now = self.clock.now()
        # A look first, which writes nothing: an idle worker's poll takes no write lock (a
        # claim writes, and on SQLite a unit that may write locks the file as it begins).
        if not await self.outbox.due(now):
            return 0
        claimed = await self.outbox.claim(now, self.policy.lease, self.policy.batch)
        for pending in claimed:
            await self.attempt(pending)
        return len(claimed)

    async def attempt(self, pending: P) -> None:
        """Try the row once, then :meth:`finish` it or, failed, hand it to :meth:`failed`."""
        raise NotImplementedError

    async def finish(self, pending: P, done: bool, detail: str) -> None:
        """Remove the row with its audit event: ``done``, or given up."""
        raise NotImplementedError

    async def give_up(self, pending: P, reason: str) -> None:
        attempts = pending.attempts + 1
        await self.finish(pending, False, f"given up after {attempts} attempt(s): {reason}")

    def describe(self, pending: P) -> str:
        """What the row is, for the log."""
        raise NotImplementedError

    async def failed(self, pending: P, error: str) -> None:
        """After a failed attempt: the row is due again after the backoff, or given up once
        older than the maximum age. ``error`` is kept for operators (never a token)."""
        attempts = pending.attempts + 1
        due = self.policy.next_attempt(pending.created_at, attempts, self.clock.now())
        if due is None:
            await self.give_up(pending, error)
            return
        await self.outbox.retry(pending.id, attempts, due, error[:500])
        self.log.warning(
            "%s failed (attempt %d, next at %s): %s",
            self.describe(pending),
            attempts,
            due.isoformat(timespec="seconds"),
            error,
        )


class OutboxInUnits(Generic[P]):
    """An outbox reached through units of work, each call in its own (a worker's view of the
    outbox its rows were written to in the units of the changes they follow)."""

    def __init__(self, units: UnitOfWork, outbox_of: Callable[[Transaction], Outbox[P]]) -> None:
        self._units = units
        self._outbox_of = outbox_of

    async def add(self, pending: P) -> None:
        async with self._units.begin() as tx:
            await self._outbox_of(tx).add(pending)

    async def due(self, now: dt.datetime) -> bool:
        async with self._units.read() as tx:
            return await self._outbox_of(tx).due(now)

    async def claim(self, now: dt.datetime, lease: dt.timedelta, limit: int) -> list[P]:
        async with self._units.begin() as tx:
            return await self._outbox_of(tx).claim(now, lease, limit)

    async def complete(self, pending_id: str) -> None:
        async with self._units.begin() as tx:
            await self._outbox_of(tx).complete(pending_id)

    async def retry(
        self, pending_id: str, attempts: int, next_attempt_at: dt.datetime, error: str
    ) -> None:
        async with self._units.begin() as tx:
            await self._outbox_of(tx).retry(pending_id, attempts, next_attempt_at, error)

    async def pending(self) -> list[P]:
        async with self._units.begin() as tx:
            return await self._outbox_of(tx).pending()
