"""The OpenID Provider's adapters: its signed tokens, and the keys of clients that
authenticate with signed assertions."""

from .signing import JwtTokenSigner

__all__ = ["JwtTokenSigner"]
