"""Rate limits in ``limits``' notation, and the moving window of the ``memory://`` store.

The notation ("10/minute", "10 per minute", "5/2 hours"; several joined by ``,``, ``;`` or
``|``) is parsed here exactly as ``limits.parse_many`` parses it (tests/unit/test_rate_window.py
compares the two), so that checking the configuration and counting in one process do not import
``limits`` at all: it is imported only for a Redis store, where its atomic Lua scripts are what
we want from it.

:class:`MovingWindow` is the in-process store: for each key the times of the requests it
allowed in the last window, oldest first. A hit drops the times that left the window, then
allows and records the request when fewer than ``amount`` remain — test and count in one step
with no ``await`` between them, so concurrent requests on the event loop cannot all slip
through. ``limits``' own asynchronous memory store does the same with a task and a thread hop
per hit and a list insertion at its front; this costs a few dictionary and deque operations.
Keys whose window emptied are swept out every few seconds, so the store holds little more than
the requests of the last window of each limit.
"""

from __future__ import annotations

import math
import re
import time
from collections import deque
from collections.abc import Callable

import attrs

from authgate.ports.ratelimit import RateDecision

# limits.util's expressions, verbatim (including its "(:?" group), so that every string limits
# accepts is accepted here and every one it refuses is refused.
_SEPARATORS = re.compile(r"[,;|]{1}")
_SINGLE = re.compile(
    r"""
    \s*([0-9]+)
    \s*(/|\s*per\s*)
    \s*([0-9]+)?
    \s*([a-z]+)
    \s*
    """,
    re.IGNORECASE | re.VERBOSE,
)
_EXPR = re.compile(
    rf"^{_SINGLE.pattern}(:?{_SEPARATORS.pattern}{_SINGLE.pattern})*$",
    re.IGNORECASE | re.VERBOSE,
)
_DAY = 24 * 60 * 60
# limits' granularities: a month is 30 days and a year 12 such months.
_SECONDS = {
    "second": 1,
    "minute": 60,
    "hour": 60 * 60,
    "day": _DAY,
    "month": 30 * _DAY,
    "year": 12 * 30 * _DAY,
}


@attrs.frozen
class Rate:
    """At most ``amount`` requests in any ``multiples`` times ``granularity`` (``seconds``)."""

    amount: int
    multiples: int
    granularity: str  # "second", "minute", … as limits names them

    @property
    def seconds(self) -> int:
        return _SECONDS[self.granularity] * self.multiples

    def text(self) -> str:
        """The limit in the notation (``limits.parse`` of it gives the same limit)."""
        return f"{self.amount}/{self.multiples} {self.granularity}"


def parse_many(text: str) -> list[Rate]:
    """The limits in ``text``; :class:`ValueError` where ``limits.parse_many`` raises one."""
    if not (isinstance(text, str) and _EXPR.match(text)):
        raise ValueError(f"couldn't parse rate limit string '{text}'")
    rates = []
    for part in _SEPARATORS.split(text):
        match = _SINGLE.match(part)
        if match:
            amount, _, multiples, unit = match.groups()
            rates.append(Rate(int(amount), int(multiples or 0) or 1, _granularity(unit)))
    return rates


def parse(text: str) -> Rate:
    """The first limit in ``text`` (as ``limits.parse``)."""
    return parse_many(text)[0]


def _granularity(unit: str) -> str:
    name = unit.lower()
    singular = name[:-1] if name.endswith("s") else name
    if name in _SECONDS:
        return name
    if singular in _SECONDS:
        return singular
    raise ValueError(f"no granularity matched for {unit}")


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
