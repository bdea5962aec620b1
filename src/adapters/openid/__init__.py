"""The OpenID Provider's adapters: its signed tokens, and the keys of clients that
authenticate with signed assertions."""

from .client_keys import RegisteredClientKeys
from .signing import JwtTokenSigner

__all__ = ["JwtTokenSigner", "RegisteredClientKeys"]
