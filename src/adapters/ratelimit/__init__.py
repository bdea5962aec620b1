"""Rate limiting on the ``limits`` library: memory for one instance, Redis to share."""

from .limiter import LimitsRateLimiter, NoRateLimit, RateLimitStore

__all__ = ["LimitsRateLimiter", "NoRateLimit", "RateLimitStore"]
