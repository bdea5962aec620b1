"""``POST /oauth2/token`` (RFC 6749 section 3.2, OpenID Connect Core 1.0 section 3.1.3): the
grants of :data:`~authgate.services.openid.grants.GRANTS` (``authorization_code``,
``refresh_token``, ``client_credentials``). Each field once, but ``resource`` (RFC 8707), which
may be repeated.

The form is read here so that every fault is an RFC 6749 section 5.2 error. Budgets
(``ratelimit.token*``, 429 ``temporarily_unavailable``): every request spends its address's, an
address whose failures spent theirs is refused before any work, then the authenticated client
spends its own: a public client's per client address too, since anyone can name it."""

from __future__ import annotations

import attrs
from aiohttp import web

from authgate.domain.openid.clients import Client
from authgate.domain.openid.refusals import (
    AuthorizationPending,
    InvalidClient,
    InvalidGrant,
    InvalidScope,
    InvalidTarget,
    OAuthError,
    OAuthInvalidRequest,
    OAuthRateLimited,
    OAuthUnavailable,
    SlowDown,
    UnauthorizedClient,
    UnsupportedGrantType,
)
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import FORM, OAuthErrorBody, oauth_form_repeating
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.errors import OAUTH_NO_STORE, oauth_example
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.openid.cors import admit_client
from authgate.entrypoints.http.openid.discovery import TOKEN_PATH, ProviderOperations
from authgate.entrypoints.rest import Call, Cors, HttpError, Reply
from authgate.ports.ratelimit import RateDecision, RateLimiter
from authgate.services.openid.client_authentication import ClientAuthentication
from authgate.services.openid.grants import TokenService
from authgate.services.openid.grants.base import TokenForm as GrantForm

TOO_MANY = "too many token requests from this client; retry later"


@attrs.frozen
class TokenForm:
    """The token request's fields (RFC 6749 4.1.3, 4.4 and 6, RFC 7636, RFC 7523, RFC 8707:
    ``resource`` may be repeated)."""

    grant_type: str
    code: str | None = None
    redirect_uri: str | None = None
    code_verifier: str | None = None
    refresh_token: str | None = None
    scope: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    client_assertion_type: str | None = None
    client_assertion: str | None = None
    resource: str | None = None
    device_code: str | None = None  # RFC 8628 section 3.4


@attrs.frozen
class TokenResponse:
    """RFC 6749 section 5.1 with OpenID Connect's ``id_token`` (none for a client's own
    token: ``client_credentials``); ``refresh_token`` only when one is issued
    (``offline_access`` granted)."""

    access_token: str
    token_type: str
    expires_in: int
    scope: str
    id_token: str | None = None
    refresh_token: str | None = None


EXAMPLES = docs.error_examples(
    oauth_example(OAuthInvalidRequest("code is missing")),
    oauth_example(InvalidGrant("the code was used already")),
    oauth_example(UnsupportedGrantType("grant_type must be authorization_code or refresh_token")),
    oauth_example(InvalidScope("the scope may only narrow what was granted")),
    oauth_example(InvalidTarget("a resource may only narrow what was granted")),
    oauth_example(UnauthorizedClient("the client may not use the grant type client_credentials")),
    oauth_example(InvalidClient("example")),
    HttpError(429, {"error": "temporarily_unavailable", "error_description": TOO_MANY}),
    oauth_example(OAuthUnavailable("the client's keys cannot be fetched; retry later")),
)


@attrs.frozen
class TokenLimits:
    """The token endpoint's budgets (docs/security.md, "Rate limits")."""

    client: RateLimiter  # an authenticated confidential client's, by client_id
    public_client: RateLimiter  # a public client's, by client address and client_id
    address: RateLimiter  # every request's, by client address, before anything
    # By client address: failed requests, but an authenticated confidential client's (its own
    # budget counts those, and its back end's address is shared by all its users).
    failures: RateLimiter


@attrs.define(slots=False, eq=False)
class TokenOperations(ProviderOperations):
    """The token endpoint."""

    service: TokenService
    client_auth: ClientAuthentication
    limits: TokenLimits
    client_address: ClientAddress
    cors: Cors | None = None

    @operation(
        "POST",
        TOKEN_PATH,
        raw_body={FORM: TokenForm},
        response=TokenResponse,
        responses={status: OAuthErrorBody for status in (400, 401, 429, 503)},
        operation_id="token",
        summary="Token endpoint (OAuth 2.0 / OpenID Connect)",
        description="grant_type=authorization_code (code, redirect_uri, code_verifier), "
        "refresh_token (refresh_token, optional narrower scope) or client_credentials "
        "(optional scope: a confidential client's own token, no ID token), each with optional "
        "resource (RFC 8707, repeatable: the token's audience), from a client "
        "authenticated as it registered (client_secret_basic, client_secret_post, "
        "private_key_jwt, or client_id alone for a public client). A code is single use: "
        "presented again it revokes what it issued. Refresh tokens rotate at every use; "
        "a replaced one presented again revokes its whole family. Never cached.",
        examples=EXAMPLES,
    )
    async def token(self, call: Call[bytes]) -> Reply[TokenResponse] | web.StreamResponse:
        request = call.request
        address = self.client_address.limit_key(self.client_address.of(request))
        _within(await self.limits.failures.peek(address))
        _within(await self.limits.address.hit(address))
        client: Client | None = None
        try:
            fields, resources = oauth_form_repeating(request.content_type, call.body, "resource")
            form = GrantForm(fields, resources)
            client = await self.client_auth.authenticate(request.headers.get("Authorization"), form)
            # From here on, the answer is readable by the pages of this client's own origins.
            admit_client(request, client)
            if client.is_public:
                # Anyone can name it: one address spends only its own share.
                _within(await self.limits.public_client.hit(f"{address} {client.client_id}"))
            else:
                _within(await self.limits.client.hit(client.client_id))
            issued = await self.service.grant(client, form)
        except OAuthError as e:
            if _a_failure(e, client):
                await self.limits.failures.hit(address)
            raise
        return Reply(
            TokenResponse(
                access_token=issued.access_token,
                token_type="Bearer",  # noqa: S106 - the token type
                expires_in=issued.expires_in,
                id_token=issued.id_token,
                scope=" ".join(issued.scopes),
                refresh_token=issued.refresh_token,
            ),
            headers=OAUTH_NO_STORE,
        )


def _within(decision: RateDecision) -> None:
    if not decision.allowed:
        raise OAuthRateLimited(decision.retry_after_seconds)


def _a_failure(e: OAuthError, client: Client | None) -> bool:
    """Whether a refusal spends the address's failure budget: the caller's fault (not a
    limit, not our outage, not a device's poll before the person answered: RFC 8628's
    protocol, however many devices wait behind one address), and not of a confidential
    client that authenticated."""
    if isinstance(e, OAuthRateLimited | OAuthUnavailable | AuthorizationPending | SlowDown):
        return False
    return client is None or client.is_public
