"""Rate limiting on the ``limits`` library: memory for one instance, Redis to share."""

from .limiter import LimitsRateLimiter

__all__ = ["LimitsRateLimiter"]
