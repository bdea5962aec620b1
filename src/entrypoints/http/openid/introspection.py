"""``POST /oauth2/introspect`` (RFC 7662), for clients registered with ``introspection: true``
only; anything not active is exactly ``{"active": false}``. Counted per client against
``ratelimit.introspection``. For servers only: no CORS."""

from __future__ import annotations

import logging
from typing import Any

import attrs

from authgate.domain.openid.refusals import ClientNotAllowed, OAuthRateLimited
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import FORM, OAuthErrorBody
from authgate.entrypoints.http.common.errors import OAUTH_NO_STORE, oauth_example
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.openid.discovery import INTROSPECTION_PATH, ProviderOperations
from authgate.entrypoints.http.openid.revocation import (
    CLIENT_ERRORS,
    PresentedTokenForm,
    authenticated_client,
    presented_token,
)
from authgate.entrypoints.rest import Call, Reply
from authgate.ports.ratelimit import RateLimiter
from authgate.services.openid.access import TokenAccess, TokenDescription
from authgate.services.openid.client_authentication import ClientAuthentication

log = logging.getLogger("authgate.openid")


@attrs.frozen
class TokenIntrospection:
    """RFC 7662 section 2.2: ``active`` alone for a token that is not active."""

    active: bool
    scope: str | None = None
    client_id: str | None = None
    sub: str | None = None
    exp: int | None = None
    iat: int | None = None
    iss: str | None = None
    # A string for one audience, a list of strings for several (RFC 7662, RFC 9068); Any, as
    # the document's schema rules describe no other union.
    aud: Any = None
    jti: str | None = None
    sid: str | None = None
    token_type: str | None = None
    auth_time: int | None = None


INACTIVE = TokenIntrospection(active=False)


def introspection_of(described: TokenDescription | None) -> TokenIntrospection:
    """The RFC 7662 answer for what :meth:`TokenAccess.describe` found."""
    if described is None:
        return INACTIVE
    auth_time, issued_at = described.auth_time, described.issued_at
    audience = described.audience
    return TokenIntrospection(
        active=True,
        scope=" ".join(described.scopes),
        client_id=described.client_id,
        sub=described.subject,
        exp=int(described.expires_at.timestamp()),
        iat=int(issued_at.timestamp()) if issued_at is not None else None,
        iss=described.issuer,
        aud=audience[0] if len(audience) == 1 else list(audience),
        jti=described.token_id,
        sid=described.session_id,
        token_type=described.token_type,
        auth_time=int(auth_time.timestamp()) if auth_time is not None else None,
    )


@attrs.define(slots=False, eq=False)
class IntrospectionOperations(ProviderOperations):
    """The introspection endpoint."""

    access: TokenAccess
    client_auth: ClientAuthentication
    limiter: RateLimiter  # ratelimit.introspection, per client

    @operation(
        "POST",
        INTROSPECTION_PATH,
        raw_body={FORM: PresentedTokenForm},
        response=TokenIntrospection,
        responses={status: OAuthErrorBody for status in (400, 401, 403, 429)},
        operation_id="introspect_token",
        summary="Token introspection",
        description="RFC 7662, for clients registered with introspection: true: whether an "
        'access, refresh or session token is active, and what it says; {"active": false} '
        "for anything else.",
        examples=docs.error_examples(
            *CLIENT_ERRORS,
            oauth_example(ClientNotAllowed("this client may not introspect tokens")),
            oauth_example(OAuthRateLimited(1)),
        ),
    )
    async def introspect(self, call: Call[bytes]) -> Reply[TokenIntrospection]:
        client, form = await authenticated_client(self.client_auth, call)
        if not client.introspection:
            log.warning(
                "introspection refused: client %r is not registered with introspection: true",
                client.client_id,
            )
            raise ClientNotAllowed(
                "this client may not introspect tokens",
                f"introspection by client {client.client_id!r}, not registered for it",
            )
        decision = await self.limiter.hit(client.client_id)
        if not decision.allowed:
            raise OAuthRateLimited(decision.retry_after_seconds)
        described = await self.access.describe(presented_token(form))
        return Reply(introspection_of(described), headers=OAUTH_NO_STORE)
