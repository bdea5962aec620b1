"""The OpenID Provider's failures, as RFC 6749 section 5.2 names them, each with its answer:
``status``, the ``error`` code of the JSON body (``error``, ``error_description``) and the
headers it adds (:meth:`OAuthError.wire_headers`). A protected resource's refusals
(:class:`BearerTokenError`) are RFC 6750's: the same body, and a ``WWW-Authenticate: Bearer``
challenge with :meth:`BearerTokenError.challenge`'s parameters. The HTTP entrypoint only
renders them."""

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

    def __init__(self, description: str, detail: str = "") -> None:
        self.description = description
        self.detail = detail or description
        super().__init__(description)

    def wire_headers(self) -> Mapping[str, str]:
        """The headers the answer adds to its ``Cache-Control`` and ``Pragma``."""
        return {}


class OAuthInvalidRequest(OAuthError):
    """A malformed request: a parameter missing, repeated or in conflict with another."""

    error = "invalid_request"


class InvalidClient(OAuthError):
    """Client authentication failed (401). ``challenge`` is the authentication scheme the
    client tried in the ``Authorization`` header (``Basic``): the answer then carries
    ``WWW-Authenticate`` with it (RFC 6749 section 5.2). The description never says which
    part was wrong; ``detail`` does, for the log."""

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
    """Something the request needs cannot be had right now (a client's key set that cannot be
    fetched): a 503, to be retried, not a verdict on the client."""

    error = "temporarily_unavailable"
    status = 503

    def wire_headers(self) -> Mapping[str, str]:
        """``Retry-After``: a little later."""
        return {"Retry-After": str(OAUTH_RETRY_AFTER_SECONDS)}


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
    """The client authenticated but may not use this endpoint (introspection by a client not
    registered with ``introspection: true``): 403, so an operator sees a misconfiguration
    rather than tokens that seem inactive or credentials that seem wrong."""

    error = "unauthorized_client"
    status = 403


class OAuthRateLimited(OAuthError):
    """The client made more requests than its limit allows: 429, with ``Retry-After``."""

    error = "temporarily_unavailable"
    status = 429

    def __init__(self, retry_after_seconds: int) -> None:
        self.retry_after_seconds = retry_after_seconds
        super().__init__(f"too many requests; retry in {retry_after_seconds} s")

    def wire_headers(self) -> Mapping[str, str]:
        """``Retry-After``: when the limit admits the client again."""
        return {"Retry-After": str(self.retry_after_seconds)}


class BearerTokenError(OAuthError):
    """A protected resource's refusal of the access token a request carries (RFC 6750
    section 3.1), answered with a ``WWW-Authenticate: Bearer`` challenge that names it: 401
    unless a subclass says otherwise (this base's ``invalid_request`` is 400)."""

    def challenge(self) -> tuple[tuple[str, str], ...]:
        """The challenge's parameters after its realm: the error and its description."""
        return (("error", self.error), ("error_description", self.description))


class NoAccessToken(BearerTokenError):
    """The request carries no access token: 401 with a bare challenge (RFC 6750 section 3.1
    gives no error code to a request without any authentication)."""

    error = "invalid_token"
    status = 401

    def __init__(self) -> None:
        super().__init__("an access token is required")

    def challenge(self) -> tuple[tuple[str, str], ...]:
        """None: a bare challenge."""
        return ()


class InvalidAccessToken(BearerTokenError):
    """The access token is not active (expired, revoked, not ours, malformed): 401.
    ``detail`` (why) is for the log only."""

    error = "invalid_token"
    status = 401

    def __init__(self, detail: str) -> None:
        super().__init__("the access token is invalid, expired or revoked", detail)


class InsufficientScope(BearerTokenError):
    """The access token is active but lacks ``scope``: 403."""

    error = "insufficient_scope"
    status = 403

    def __init__(self, scope: str) -> None:
        self.scope = scope
        super().__init__(f"the access token lacks the {scope} scope")

    def challenge(self) -> tuple[tuple[str, str], ...]:
        """The error, its description and the scope needed."""
        return (*super().challenge(), ("scope", self.scope))


class BearerRateLimited(OAuthRateLimited, BearerTokenError):
    """A protected resource's refusal of a client address over its limit: 429 with
    ``Retry-After``, and the challenge naming ``temporarily_unavailable`` as RFC 6750's answers
    name their errors (the token is not judged)."""


class BearerInvalidRequest(BearerTokenError):
    """The token was sent in more than one way, or the request is otherwise malformed: 400."""

    error = "invalid_request"
