"""Rate limits by key (a client address, say)."""

from __future__ import annotations

from typing import Protocol

import attrs


@attrs.frozen
class RateDecision:
    allowed: bool
    retry_after_seconds: int = 0


class RateLimiter(Protocol):
    async def hit(self, key: str) -> RateDecision:
        """Count one request for ``key`` and say whether it is within the limit."""

    async def peek(self, key: str) -> RateDecision:
        """Whether one more request for ``key`` would be within the limit now, counting
        nothing: for a budget spent only by some outcomes (failures), checked before any
        work."""
