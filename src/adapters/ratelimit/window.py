"""The moving window of the ``memory://`` rate-limit store.

:class:`MovingWindow` keeps, for each key, the times of the requests it allowed in the last
window, oldest first. A hit drops the times that left the window, then allows and records the
request when fewer than ``amount`` remain — test and count in one step with no ``await`` between
them, so concurrent requests on the event loop cannot all slip through. ``limits``' own
asynchronous memory store does the same with a task and a thread hop per hit and a list
insertion at its front; this costs a few dictionary and deque operations. Keys whose window
emptied are swept out every few seconds, so the store holds little more than the requests of
the last window of each limit.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

from authgate.domain.rates import Rate
from authgate.ports.ratelimit import RateDecision


class MovingWindow:
    """The requests allowed per key in the last window of each limit, in this process."""

    SWEEP_SECONDS = 10.0  # at most this often, keys whose window emptied are dropped

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # per key: the times of the requests allowed, oldest first, and its window's length
        self._windows: dict[str, tuple[deque[float], int]] = {}
        self._next_sweep = clock() + self.SWEEP_SECONDS

    def hit(self, rate: Rate, key: str) -> RateDecision:
        """Count one request for ``key`` (namespaced by the caller) against ``rate``."""
        now = self._clock()
        if now >= self._next_sweep:
            self._sweep(now)
        seconds = rate.seconds
        entry = self._windows.get(key)
        if entry is None:
            window: deque[float] = deque()
            self._windows[key] = (window, seconds)
        else:
            window = entry[0]
            start = now - seconds
            while window and window[0] <= start:
                window.popleft()
        if len(window) < rate.amount:
            window.append(now)
            return RateDecision(True)
        # Allowed again once the oldest counted request leaves the window.
        return RateDecision(False, max(1, math.ceil(window[0] + seconds - now)))

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
