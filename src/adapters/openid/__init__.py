"""The OpenID Provider's adapters: its signed tokens, the keys of clients that authenticate
with signed assertions, and the clients' back-channel logout endpoints."""

from .backchannel import HttpLogoutTokenSender
from .client_keys import RegisteredClientKeys
from .signing import JwtTokenSigner

__all__ = ["HttpLogoutTokenSender", "JwtTokenSigner", "RegisteredClientKeys"]
