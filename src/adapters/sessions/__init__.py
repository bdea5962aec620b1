"""Session tokens: JWTs the service signs with its own keys (the key file: ``keys``)."""

from .jwt import JwtSessionTokens
from .keys import SessionKeyError, ephemeral_keys, load_or_create_keys

__all__ = ["JwtSessionTokens", "SessionKeyError", "ephemeral_keys", "load_or_create_keys"]
