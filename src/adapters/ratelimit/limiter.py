"""Moving-window limits ("10 per minute" means at most 10 in any 60 seconds) in one store.

``limits``' ``hit`` tests and counts in one atomic step (a Lua script on Redis), so concurrent
requests cannot all slip through as they do with test-then-hit. Several limits (the callback's,
the initiation's) share one :class:`RateLimitStore`, each in its own namespace: one Redis
connection pool, one fail-open policy. When the store is unreachable every limit fails open or
closed as configured, and the log says so once per 10 seconds for the store, not once per
limit or per request.
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


class RateLimitStore:
    """The storage of the rate limits (``memory://`` or ``redis://…``) and what to do when it
    is unreachable (``fail_open``)."""

    def __init__(self, url: str, *, fail_open: bool = True) -> None:
        self._storage = _storage(url)
        self._strategy = MovingWindowRateLimiter(self._storage)
        self._fail_open = fail_open
        self._last_failure_log = 0.0

    def limiter(self, limit: str, *, namespace: str) -> LimitsRateLimiter:
        """A limit (``"10/minute"``) counted in this store under its own ``namespace``."""
        return LimitsRateLimiter(self, parse(limit), namespace)

    async def hit(self, item: RateLimitItem, namespace: str, key: str) -> RateDecision:
        """Count one request for ``key`` against ``item`` in ``namespace``."""
        try:
            if await self._strategy.hit(item, namespace, key):
                return RateDecision(True)
            stats = await self._strategy.get_window_stats(item, namespace, key)
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


class LimitsRateLimiter:
    """One limit in a :class:`RateLimitStore` (made by :meth:`RateLimitStore.limiter`)."""

    def __init__(self, store: RateLimitStore, item: RateLimitItem, namespace: str) -> None:
        self._store = store
        self._item = item
        self._namespace = namespace

    @property
    def limit(self) -> RateLimitItem:
        """The limit, as ``limits`` parsed it."""
        return self._item

    async def hit(self, key: str) -> RateDecision:
        """Count one request for ``key``; refused with the seconds until one is allowed."""
        return await self._store.hit(self._item, self._namespace, key)


class NoRateLimit:
    """A limit switched off (``ratelimit.initiation: null``): every request is allowed."""

    async def hit(self, key: str) -> RateDecision:
        """Allow, without counting."""
        return RateDecision(True)


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
