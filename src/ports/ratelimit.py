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
        ...
