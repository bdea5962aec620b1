"""Waiting for a condition instead of sleeping a fixed time.

A fixed sleep either wastes time or, on a loaded machine, is too short; a tight deadline fails a
correct test whose machine is busy. :func:`eventually` polls until the condition holds and only
gives up after a deadline far beyond any expected wait: it bounds a hang, it does not time the
behaviour under test.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

GENEROUS_SECONDS = 30.0


async def eventually(
    condition: Callable[[], bool | Awaitable[bool]],
    *,
    what: str,
    within: float = GENEROUS_SECONDS,
    every: float = 0.01,
) -> float:
    """Seconds until ``condition()`` (a predicate, sync or async) is true.

    Raises AssertionError naming ``what`` when it is still false after ``within`` seconds.
    """
    started = time.monotonic()
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return time.monotonic() - started
        if time.monotonic() - started > within:
            raise AssertionError(f"{what}: still not the case after {within} s")
        await asyncio.sleep(every)
