"""Session tokens minted by the service (a JWT, also accepted as the bearer token)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from authgate.domain.model import IssuedSession

__all__ = ["InvalidSession", "IssuedSession", "ResumedRequest", "SessionClaims", "SessionTokens"]


@attrs.frozen
class ResumedRequest:
    """An application's authorization request that started a sign-in (``key``: its
    ``resume_key``) and when that sign-in began."""

    key: str
    signin_started_at: dt.datetime


@attrs.frozen
class SessionClaims:
    """A verified session token (``session_id``: its ``sid``). One issued by a sign-in that
    an authorization request started names it (``resumes``) and when the sign-in began:
    signed, so no browser can forge them as it could the resumed request's address."""

    account_id: str
    provider: str | None
    scopes: frozenset[str]
    expires_at: dt.datetime
    claims: Mapping[str, Any]
    session_id: str = ""
    issued_at: dt.datetime | None = None
    auth_time: dt.datetime | None = None
    resumes: str | None = None
    signin_started_at: dt.datetime | None = None


class InvalidSession(Exception):
    """The token is malformed, badly signed, expired or not ours. The text is for the log."""


class SessionTokens(Protocol):
    def issue(
        self,
        account_id: str,
        provider: str,
        now: dt.datetime,
        *,
        session_id: str | None = None,
        auth_time: dt.datetime | None = None,
        expires_at: dt.datetime | None = None,
        resumes: ResumedRequest | None = None,
    ) -> IssuedSession:
        """A new token, for a new session (no ``session_id``) or a renewed one.
        ``auth_time`` defaults to ``now``, ``expires_at`` to ``now`` plus the lifetime."""

    def expiry(self, now: dt.datetime) -> dt.datetime:
        """When a token :meth:`issue` gives at ``now`` without ``expires_at`` expires."""

    def verify(self, token: str, now: dt.datetime) -> SessionClaims:
        """Raises :class:`InvalidSession`."""

    def public_jwks(self) -> Mapping[str, Any]:
        """The public keys, as a JWKS document."""
