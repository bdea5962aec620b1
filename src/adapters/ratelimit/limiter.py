"""Moving-window limits ("10 per minute": at most 10 in any 60 seconds) in one store.

Every hit tests and counts in one atomic step, so concurrent requests cannot all slip through:
on Redis through ``limits``' Lua scripts (imported only then), in memory through
:class:`MovingWindow`, with no ``await`` (``limits``' own memory store takes a task and a
thread hop per hit). Limits share one :class:`RateLimitStore`, each in its own namespace; when
Redis is unreachable they fail open or closed as configured, logged once as it becomes
unreachable and once as it answers again.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from authgate.domain.rates import Rate, parse
from authgate.ports.ratelimit import RateDecision

if TYPE_CHECKING:
    from limits import RateLimitItem
    from limits.aio.storage import Storage
    from limits.aio.strategies import MovingWindowRateLimiter

log = logging.getLogger("authgate.ratelimit")


class RateLimitStore:
    """The storage of the rate limits (``memory://`` or ``redis://…``), how long a Redis
    request may take before Redis counts as unreachable (``timeout_seconds``, for connecting
    and for each answer), and what to do then (``fail_open``)."""

    def __init__(self, url: str, *, fail_open: bool = True, timeout_seconds: float = 0.5) -> None:
        self._memory: MovingWindow | None = None
        self._strategy: MovingWindowRateLimiter | None = None
        if url.startswith("memory://"):
            self._memory = MovingWindow()
        else:
            from limits.aio.strategies import MovingWindowRateLimiter

            self._strategy = MovingWindowRateLimiter(_redis_storage(url, timeout_seconds))
        self._fail_open = fail_open
        self._unreachable = False  # since the last failure, until a hit succeeds

    @property
    def fail_open(self) -> bool:
        """Whether requests are allowed while the store is unreachable."""
        return self._fail_open

    async def ping(self) -> None:
        """Reach the store once (readiness, ``authgate config check``); raises when it cannot
        be reached. A memory store is always there."""
        if self._strategy is None:
            return
        if not await self._strategy.storage.check():
            raise ConnectionError("the rate-limit store (Redis) does not answer")

    def limiter(self, limit: str, *, namespace: str) -> LimitsRateLimiter | MemoryRateLimiter:
        """A limit (``"10/minute"``) counted in this store under its own ``namespace``."""
        rate = parse(limit)
        if self._memory is not None:
            return MemoryRateLimiter(self._memory, rate, namespace)
        from limits import parse as limits_parse

        return LimitsRateLimiter(self, limits_parse(rate.text()), namespace)

    async def decide(
        self, item: RateLimitItem, namespace: str, key: str, *, count: bool
    ) -> RateDecision:
        """Whether one more request for ``key`` is within ``item`` in ``namespace`` now,
        counting it with ``count``."""
        assert self._strategy is not None  # a Redis store: memory limits count in MovingWindow
        strategy = self._strategy
        try:
            within = await (strategy.hit if count else strategy.test)(item, namespace, key)
            if within:
                decision = RateDecision(True)
            else:
                stats = await strategy.get_window_stats(item, namespace, key)
                decision = RateDecision(False, max(1, math.ceil(stats.reset_time - time.time())))
        except Exception as e:
            if not self._unreachable:  # one line per outage, not one per request
                self._unreachable = True
                log.error(
                    "rate-limit store unreachable (%s: %s); failing %s",
                    type(e).__name__,
                    e,
                    "open: requests are not limited"
                    if self._fail_open
                    else "closed: answering 429",
                )
            return RateDecision(True) if self._fail_open else RateDecision(False, 1)
        if self._unreachable:
            self._unreachable = False
            log.warning("rate-limit store reachable again: requests are limited again")
        return decision


class LimitsRateLimiter:
    """One limit in a :class:`RateLimitStore` (made by :meth:`RateLimitStore.limiter`)."""

    def __init__(self, store: RateLimitStore, item: RateLimitItem, namespace: str) -> None:
        self._store = store
        self._item = item
        self._namespace = namespace

    async def hit(self, key: str) -> RateDecision:
        return await self._store.decide(self._item, self._namespace, key, count=True)

    async def peek(self, key: str) -> RateDecision:
        return await self._store.decide(self._item, self._namespace, key, count=False)


class MemoryRateLimiter:
    """One limit in a ``memory://`` store: counted in this process, never unreachable."""

    def __init__(self, window: MovingWindow, rate: Rate, namespace: str) -> None:
        self._window = window
        self._amount, self._seconds = rate.amount, rate.seconds
        self._prefix = namespace + "/"

    async def hit(self, key: str) -> RateDecision:
        return self._window.hit(self._amount, self._seconds, self._prefix + key)

    async def peek(self, key: str) -> RateDecision:
        return self._window.peek(self._amount, self._seconds, self._prefix + key)


class MovingWindow:
    """The requests allowed per key in the last window of each limit, in this process."""

    SWEEP_SECONDS = 10.0  # at most this often, keys whose window emptied are dropped

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # per key: the times of the requests allowed, oldest first, and its window's length
        self._windows: dict[str, tuple[deque[float], int]] = {}
        self._next_sweep = clock() + self.SWEEP_SECONDS

    def hit(self, amount: int, seconds: int, key: str) -> RateDecision:
        """Count one request for ``key`` against ``amount`` per ``seconds``."""
        now = self._clock()
        if now >= self._next_sweep:
            self._sweep(now)
        entry = self._windows.get(key)
        if entry is None:
            window: deque[float] = deque()
            self._windows[key] = (window, seconds)
        else:
            window = entry[0]
            _drop_before(window, now - seconds)
        if len(window) < amount:
            window.append(now)
            return RateDecision(True)
        return _refused(window, seconds, now)

    def peek(self, amount: int, seconds: int, key: str) -> RateDecision:
        """Whether one more request for ``key`` is within the limit now, counting nothing."""
        entry = self._windows.get(key)
        if entry is None:
            return RateDecision(True)
        window = entry[0]
        now = self._clock()
        _drop_before(window, now - seconds)
        if len(window) < amount:
            return RateDecision(True)
        return _refused(window, seconds, now)

    def __len__(self) -> int:
        """How many keys have requests counted (for tests and the curious)."""
        return len(self._windows)

    def __contains__(self, key: str) -> bool:
        return key in self._windows

    def _sweep(self, now: float) -> None:
        # A key whose newest request left its window counts nothing any more.
        idle = [k for k, (w, seconds) in self._windows.items() if not w or w[-1] <= now - seconds]
        for key in idle:
            del self._windows[key]
        self._next_sweep = now + self.SWEEP_SECONDS


def _drop_before(window: deque[float], start: float) -> None:
    while window and window[0] <= start:
        window.popleft()


def _refused(window: deque[float], seconds: int, now: float) -> RateDecision:
    # Allowed again once the oldest counted request leaves the window.
    return RateDecision(False, max(1, math.ceil(window[0] + seconds - now)))


class NoRateLimit:
    """A limit switched off (``ratelimit.initiation: null``): every request is allowed."""

    async def hit(self, key: str) -> RateDecision:
        return RateDecision(True)

    async def peek(self, key: str) -> RateDecision:
        return RateDecision(True)


def _redis_storage(url: str, timeout_seconds: float) -> Storage:
    if url.startswith(("redis://", "rediss://", "unix://")):
        from limits.aio.storage import RedisStorage

        # redis-py rather than limits' default coredis: one Redis client in the dependency set.
        return RedisStorage(
            "async+" + url,
            implementation="redispy",
            wrap_exceptions=True,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
        )
    raise ValueError(f"unsupported rate-limit storage {url!r} (memory:// or redis://…)")
