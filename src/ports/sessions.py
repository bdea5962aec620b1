"""Session tokens minted by the service (a JWT, also accepted as the bearer token)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from authgate.domain.model import IssuedSession

__all__ = ["InvalidSession", "IssuedSession", "SessionClaims", "SessionTokens"]


@attrs.frozen
class SessionClaims:
    account_id: str
    provider: str | None
    scopes: frozenset[str]
    expires_at: dt.datetime
    claims: Mapping[str, Any]


class InvalidSession(Exception):
    """The token is malformed, badly signed, expired or not ours. The text is for the log."""


class SessionTokens(Protocol):
    def issue(self, account_id: str, provider: str, now: dt.datetime) -> IssuedSession: ...

    def verify(self, token: str, now: dt.datetime) -> SessionClaims:
        """Raises :class:`InvalidSession`."""
        ...

    def public_jwks(self) -> Mapping[str, Any]:
        """The public keys, as a JWKS document."""
        ...
