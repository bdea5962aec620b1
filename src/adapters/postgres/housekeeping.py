"""Clean-up without a cron: traffic triggers it, at most once per interval, in the background.

Each instance purges on its own schedule; concurrent purges by several instances are harmless
(they delete the same expired rows, whichever runs first wins). A failed purge is logged and
retried at the next trigger after the interval; it never fails the operation that triggered it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger("authgate.storage")


class PeriodicPurge:
    """Runs ``job`` in a background task when triggered and at least ``interval`` has passed."""

    def __init__(
        self, name: str, job: Callable[[], Awaitable[int]], interval: dt.timedelta
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
        try:
            removed = await self._job()
        except Exception as e:  # the database may be down: try again next interval
            log.warning("purge of %s failed: %s: %s", self._name, type(e).__name__, e)
        else:
            if removed:
                log.info("purged %d %s", removed, self._name)

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
