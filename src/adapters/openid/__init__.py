"""The OpenID Provider's adapters: the keys of clients that authenticate with signed
assertions, and the clients' back-channel logout endpoints."""

from .backchannel import HttpLogoutTokenSender
from .client_keys import RegisteredClientKeys

__all__ = ["HttpLogoutTokenSender", "RegisteredClientKeys"]
