"""Provider tokens at rest: sealed with keys from configuration."""

from .sealer import JweTokenSealer, SealingKey, SealingKeyError

__all__ = ["JweTokenSealer", "SealingKey", "SealingKeyError"]
