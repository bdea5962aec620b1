"""A moving-window limit ("10 per minute" means at most 10 in any 60 seconds).

``limits``' ``hit`` tests and counts in one atomic step (a Lua script on Redis), so concurrent
requests cannot all slip through as they do with test-then-hit. When the store is unreachable
the limiter fails open or closed as configured, and says so in the log.
"""

from __future__ import annotations

import logging
import math
import time

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter

from authgate.ports.ratelimit import RateDecision

log = logging.getLogger("authgate.ratelimit")


class LimitsRateLimiter:
    def __init__(
        self, storage_url: str, limit: str, *, namespace: str, fail_open: bool = True
    ) -> None:
        self._item: RateLimitItem = parse(limit)
        self._storage = _storage(storage_url)
        self._limiter = MovingWindowRateLimiter(self._storage)
        self._namespace = namespace
        self._fail_open = fail_open
        self._last_failure_log = 0.0

    @property
    def limit(self) -> RateLimitItem:
        return self._item

    async def hit(self, key: str) -> RateDecision:
        try:
            if await self._limiter.hit(self._item, self._namespace, key):
                return RateDecision(True)
            stats = await self._limiter.get_window_stats(self._item, self._namespace, key)
        except Exception as e:
            self._log_failure(e)
            if self._fail_open:
                return RateDecision(True)
            return RateDecision(False, 1)
        return RateDecision(False, max(1, math.ceil(stats.reset_time - time.time())))

    def _log_failure(self, e: Exception) -> None:
        now = time.monotonic()
        if now - self._last_failure_log > 10:  # one line per 10 s, not one per request
            self._last_failure_log = now
            log.error(
                "rate-limit store unreachable (%s: %s); failing %s",
                type(e).__name__,
                e,
                "open: requests are not limited" if self._fail_open else "closed: answering 429",
            )


def _storage(url: str) -> Storage:
    if url.startswith("memory://"):
        return MemoryStorage()
    if url.startswith(("redis://", "rediss://", "unix://")):
        # redis-py rather than limits' default coredis: one Redis client in the dependency set.
        return RedisStorage(
            "async+" + url,
            implementation="redispy",
            wrap_exceptions=True,
            socket_timeout=0.5,
            socket_connect_timeout=0.5,
        )
    raise ValueError(f"unsupported rate-limit storage {url!r} (memory:// or redis://…)")
