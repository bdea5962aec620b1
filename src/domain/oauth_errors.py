"""The OpenID Provider's failures, as RFC 6749 section 5.2 names them. The HTTP entrypoint maps
each to a status and a JSON body (``error``, ``error_description``) in one place."""

from __future__ import annotations

from typing import ClassVar


class OAuthError(Exception):
    """Base of the provider's expected failures. ``error`` is the RFC 6749 code,
    ``description`` is safe to show the client, ``detail`` is for the log only."""

    error: ClassVar[str] = "invalid_request"

    def __init__(self, description: str, detail: str = "") -> None:
        self.description = description
        self.detail = detail or description
        super().__init__(description)


class OAuthInvalidRequest(OAuthError):
    """A malformed request: a parameter missing, repeated or in conflict with another."""

    error = "invalid_request"


class InvalidClient(OAuthError):
    """Client authentication failed (401). ``challenge`` is the authentication scheme the
    client tried in the ``Authorization`` header (``Basic``): the answer then carries
    ``WWW-Authenticate`` with it (RFC 6749 section 5.2). The description never says which
    part was wrong; ``detail`` does, for the log."""

    error = "invalid_client"

    def __init__(self, detail: str, *, challenge: str | None = None) -> None:
        self.challenge = challenge
        super().__init__("client authentication failed", detail)


class OAuthUnavailable(OAuthError):
    """Something the request needs cannot be had right now (a client's key set that cannot be
    fetched): a 503, to be retried, not a verdict on the client."""

    error = "temporarily_unavailable"


class InvalidGrant(OAuthError):
    """The code or refresh token is unknown, expired, used, revoked, issued to another client,
    or does not match the request (``redirect_uri``, the PKCE verifier)."""

    error = "invalid_grant"


class UnsupportedGrantType(OAuthError):
    """A ``grant_type`` the token endpoint does not serve."""

    error = "unsupported_grant_type"


class InvalidScope(OAuthError):
    """A scope the client may not have, or wider than what the grant gave."""

    error = "invalid_scope"
