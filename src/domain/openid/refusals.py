"""The OpenID Provider's failures, as RFC 6749 section 5.2 names them, each with its answer's
status, ``error`` code and headers; a protected resource's (:class:`BearerTokenError`) are RFC
6750's, with a ``WWW-Authenticate: Bearer`` challenge. The HTTP entrypoint only renders them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

# The realm of the provider's challenges (RFC 7617 requires one for Basic).
OAUTH_REALM = "authgate"
# What an unavailable dependency's answer tells the client to wait.
OAUTH_RETRY_AFTER_SECONDS = 5


class OAuthError(Exception):
    """Base of the provider's expected failures. ``error`` is the RFC 6749 code,
    ``description`` is safe to show the client, ``detail`` is for the log only."""

    error: ClassVar[str] = "invalid_request"
    status: ClassVar[int] = 400
    retry_after: int | None = None  # seconds, the answer's Retry-After

    def __init__(self, description: str, detail: str = "") -> None:
        self.description = description
        self.detail = detail or description
        super().__init__(description)

    def wire_headers(self) -> Mapping[str, str]:
        """The headers the answer adds to its ``Cache-Control`` and ``Pragma``."""
        return {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}


class OAuthInvalidRequest(OAuthError):
    """A malformed request: a parameter missing, repeated or in conflict with another."""

    error = "invalid_request"


class InvalidClient(OAuthError):
    """Client authentication failed. ``challenge``: the scheme the client tried in its
    ``Authorization`` header, answered with ``WWW-Authenticate`` (RFC 6749 section 5.2). Only
    ``detail``, for the log, says which part was wrong."""

    error = "invalid_client"
    status = 401

    def __init__(self, detail: str, *, challenge: str | None = None) -> None:
        self.challenge = challenge
        super().__init__("client authentication failed", detail)

    def wire_headers(self) -> Mapping[str, str]:
        """``WWW-Authenticate`` of the scheme the client tried, if it tried one."""
        if self.challenge is None:
            return {}
        return {"WWW-Authenticate": f'{self.challenge} realm="{OAUTH_REALM}", charset="UTF-8"'}


class OAuthUnavailable(OAuthError):
    """Something the request needs cannot be had now (a client's key set): to be retried, not
    a verdict on the client."""

    error = "temporarily_unavailable"
    status = 503
    retry_after = OAUTH_RETRY_AFTER_SECONDS


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


class ClientNotAllowed(OAuthError):
    """The client authenticated but may not use this endpoint (introspection without
    ``introspection: true``): a 403 shows an operator the misconfiguration, where inactive
    tokens or a 401 would mislead."""

    error = "unauthorized_client"
    status = 403


class UnauthorizedClient(OAuthError):
    """The client authenticated but may not use this grant type (RFC 6749 section 5.2): its
    registration does not list it."""

    error = "unauthorized_client"


class InvalidTarget(OAuthError):
    """A ``resource`` the client may not have tokens for, or one that is not an absolute URI
    without a fragment (RFC 8707 section 2), or wider than what the grant gave."""

    error = "invalid_target"


class AuthorizationPending(OAuthError):
    """A device polls before the person approved or denied its request (RFC 8628 section
    3.5): it keeps polling at its interval."""

    error = "authorization_pending"


class SlowDown(OAuthError):
    """A device polls faster than its interval (RFC 8628 section 3.5): the interval grew by
    five seconds."""

    error = "slow_down"


class AccessDenied(OAuthError):
    """The person denied the device's request (RFC 8628 section 3.5)."""

    error = "access_denied"


class ExpiredToken(OAuthError):
    """The device code expired before the person approved it (RFC 8628 section 3.5): the
    device starts again."""

    error = "expired_token"


class OAuthRateLimited(OAuthError):
    """The client is over its rate limit."""

    error = "temporarily_unavailable"
    status = 429

    def __init__(self, retry_after_seconds: int) -> None:
        self.retry_after = retry_after_seconds
        super().__init__(f"too many requests; retry in {retry_after_seconds} s")


class BearerTokenError(OAuthError):
    """A protected resource's refusal of a request's access token (RFC 6750 section 3.1),
    answered with a ``WWW-Authenticate: Bearer`` challenge."""

    def challenge(self) -> tuple[tuple[str, str], ...]:
        """The challenge's parameters after its realm: the error and its description."""
        return (("error", self.error), ("error_description", self.description))


class NoAccessToken(BearerTokenError):
    """The request carries no access token: a bare challenge (RFC 6750 section 3.1 gives no
    error code to a request without any authentication)."""

    error = "invalid_token"
    status = 401

    def __init__(self) -> None:
        super().__init__("an access token is required")

    def challenge(self) -> tuple[tuple[str, str], ...]:
        return ()


class InvalidAccessToken(BearerTokenError):
    """The access token is not active (expired, revoked, not ours, malformed)."""

    error = "invalid_token"
    status = 401

    def __init__(self, detail: str) -> None:
        super().__init__("the access token is invalid, expired or revoked", detail)


class InsufficientScope(BearerTokenError):
    """The access token is active but lacks ``scope``."""

    error = "insufficient_scope"
    status = 403

    def __init__(self, scope: str) -> None:
        self.scope = scope
        super().__init__(f"the access token lacks the {scope} scope")

    def challenge(self) -> tuple[tuple[str, str], ...]:
        return (*super().challenge(), ("scope", self.scope))


class BearerRateLimited(OAuthRateLimited, BearerTokenError):
    """A protected resource's refusal of a client address over its limit, its challenge
    naming ``temporarily_unavailable`` (the token is not judged)."""


class BearerInvalidRequest(BearerTokenError):
    """The token was sent in more than one way, or the request is otherwise malformed."""

    error = "invalid_request"
