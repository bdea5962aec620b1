"""Rate limiting: in this process's memory for one instance, Redis (``limits``) to share."""

from .limiter import LimitsRateLimiter, MemoryRateLimiter, NoRateLimit, RateLimitStore

__all__ = ["LimitsRateLimiter", "MemoryRateLimiter", "NoRateLimit", "RateLimitStore"]
