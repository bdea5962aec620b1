"""Clean-up without a cron for the embedded store: traffic triggers it at most once per
interval. A local DELETE on an indexed column is cheap, so it runs inline, after the operation
that triggered it has committed; a failure is logged and never fails that operation."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger("authgate.storage")


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
