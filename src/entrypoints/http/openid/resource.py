"""The OpenID Provider's endpoints around an issued token: userinfo, revocation and
introspection.

* ``GET``/``POST /oauth2/userinfo`` (OpenID Connect Core section 5.3): the bearer access token
  in the ``Authorization`` header, or (``POST``) the form field ``access_token`` (RFC 6750
  section 2.2), never both; ``sub`` and the claims its scopes cover (``email`` and
  ``email_verified`` for ``email``; ``name`` for ``profile``), claims the account lacks left
  out; ``Cache-Control: no-store``. Refusals are RFC 6750's: 401 with ``WWW-Authenticate:
  Bearer error="invalid_token"`` (a bare challenge without a token), 403
  ``insufficient_scope`` for a token without ``openid``, 400 ``invalid_request``. Counted per
  client address against ``ratelimit.userinfo`` before anything (429 with ``Retry-After`` and
  a challenge naming ``temporarily_unavailable``).
* ``POST /oauth2/revoke`` (RFC 7009): the client authenticates as at the token endpoint; a
  refresh or access token of that client revokes its whole family; any other token (another
  client's, unknown, expired) answers 200 too and changes nothing. ``token_type_hint`` is
  accepted and not needed: the token's kind is told by the token itself.
* ``POST /oauth2/introspect`` (RFC 7662): only clients registered with ``introspection: true``
  (another authenticated client: 403 ``unauthorized_client``); an active access, refresh or
  session token is described, anything else is exactly ``{"active": false}``. Counted per
  client against ``ratelimit.introspection`` when it is set (429 with ``Retry-After``).

Userinfo and revocation answer CORS for public clients' registered origins
(:mod:`~authgate.entrypoints.http.openid.cors`); introspection is for servers only. Whether a
token is active is decided in one place, :mod:`authgate.services.openid.access`. Errors of
the client (its authentication, a malformed form) are RFC 6749 section 5.2's, answered by
:mod:`authgate.entrypoints.http.common.errors`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import attrs
from aiohttp import web

from authgate.domain.model import Account
from authgate.domain.openid.clients import Client, ClientRegistry
from authgate.domain.openid.refusals import (
    BearerInvalidRequest,
    BearerRateLimited,
    ClientNotAllowed,
    InsufficientScope,
    InvalidAccessToken,
    InvalidClient,
    NoAccessToken,
    OAuthInvalidRequest,
    OAuthRateLimited,
)
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import FORM, OAuthErrorBody, oauth_form
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.errors import oauth_example
from authgate.entrypoints.http.openid.cors import PublicClientCors, admit_client
from authgate.entrypoints.http.openid.discovery import (
    INTROSPECTION_PATH,
    REVOCATION_PATH,
    USERINFO_PATH,
)
from authgate.entrypoints.rest import Api, Call, Reply
from authgate.ports.ratelimit import RateLimiter
from authgate.services.openid.access import TokenAccess, TokenDescription, TokenInactive
from authgate.services.openid.client_authentication import ClientAuthentication

log = logging.getLogger("authgate.openid")

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
OPENID = "openid"


@attrs.frozen
class UserInfo:
    """The userinfo answer: ``sub`` and the claims the token's scopes cover that the account
    has (OpenID Connect Core section 5.3.2: a claim without a value is left out)."""

    sub: str
    name: str | None = None
    email: str | None = None
    email_verified: bool | None = None


@attrs.frozen
class UserInfoForm:
    """A userinfo ``POST`` may carry the access token in its form instead of the header."""

    access_token: str | None = None


@attrs.frozen
class PresentedTokenForm:
    """A token the client presents, with its authentication (RFC 6749 section 2.3): the
    same fields for revocation (RFC 7009 section 2.1) and introspection (RFC 7662 section
    2.1)."""

    token: str
    token_type_hint: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    client_assertion: str | None = None
    client_assertion_type: str | None = None


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
    aud: str | None = None
    jti: str | None = None
    sid: str | None = None
    token_type: str | None = None
    auth_time: int | None = None


INACTIVE = TokenIntrospection(active=False)


def userinfo_claims(account: Account, scopes: tuple[str, ...]) -> UserInfo:
    """``sub`` and the claims ``scopes`` cover that ``account`` has."""
    email = account.email if "email" in scopes else None
    return UserInfo(
        sub=account.id,
        name=account.name if "profile" in scopes else None,
        email=email,
        email_verified=account.email_verified if email is not None else None,
    )


def introspection_of(described: TokenDescription | None) -> TokenIntrospection:
    """The RFC 7662 answer for what :meth:`TokenAccess.describe` found."""
    if described is None:
        return INACTIVE
    auth_time = described.auth_time
    issued_at = described.issued_at
    return TokenIntrospection(
        active=True,
        scope=" ".join(described.scopes),
        client_id=described.client_id,
        sub=described.subject,
        exp=int(described.expires_at.timestamp()),
        iat=int(issued_at.timestamp()) if issued_at is not None else None,
        iss=described.issuer,
        aud=described.audience,
        jti=described.token_id,
        sid=described.session_id,
        token_type=described.token_type,
        auth_time=int(auth_time.timestamp()) if auth_time is not None else None,
    )


def bearer_token(authorization: str | None, form: Mapping[str, str]) -> str:
    """The access token of a userinfo request: ``Authorization: Bearer`` or the form's
    ``access_token``, exactly one of them (RFC 6750 section 2)."""
    from_form = form.get("access_token")
    from_header: str | None = None
    if authorization is not None:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "bearer":
            value = value.strip()
            if not value or " " in value:
                raise BearerInvalidRequest("the Authorization header is not Bearer <token>")
            from_header = value
    if from_header is not None and from_form is not None:
        raise BearerInvalidRequest("the access token was sent in more than one way")
    token = from_header if from_header is not None else from_form
    if not token:
        raise NoAccessToken()
    return token


class ResourceOperations:
    """Registers userinfo, revocation and introspection."""

    def __init__(
        self,
        access: TokenAccess,
        clients: ClientRegistry,
        client_auth: ClientAuthentication,
        cors: PublicClientCors,
        introspection_limiter: RateLimiter,
        userinfo_limiter: RateLimiter | None = None,
        client_address: ClientAddress | None = None,
    ) -> None:
        self.access = access
        self.clients = clients
        self.client_auth = client_auth
        self.cors = cors
        self.limiter = introspection_limiter
        self.userinfo_limiter = userinfo_limiter  # ratelimit.userinfo, per client address
        self.client_address = client_address or ClientAddress(())

    def register(self, api: Api) -> None:
        docs.describe_tags(api, docs.OPENID_PROVIDER)
        tags = (docs.OPENID_PROVIDER,)
        refusals: dict[int, type | str] = {
            400: OAuthErrorBody,
            401: OAuthErrorBody,
            403: OAuthErrorBody,
        }
        userinfo_errors = docs.error_examples(
            oauth_example(BearerInvalidRequest("the access token was sent in more than one way")),
            oauth_example(InvalidAccessToken("example")),
            oauth_example(InsufficientScope(OPENID)),
            oauth_example(BearerRateLimited(1)),
        )
        userinfo_refusals: dict[int, type | str] = {**refusals, 429: OAuthErrorBody}
        described = (
            "The claims of the person an access token speaks for: sub, and email, "
            "email_verified (scope email) and name (scope profile) where the account has them. "
            "The access token as the Authorization header's Bearer token"
        )
        api.operation(
            "GET",
            USERINFO_PATH,
            response=UserInfo,
            responses=userinfo_refusals,
            operation_id="userinfo",
            tags=tags,
            summary="UserInfo",
            description=described + " (OpenID Connect Core 1.0 section 5.3).",
            examples=userinfo_errors,
            cors=self.cors,
        )(self.userinfo)
        api.operation(
            "POST",
            USERINFO_PATH,
            raw_body={FORM: UserInfoForm},
            response=UserInfo,
            responses=userinfo_refusals,
            operation_id="userinfo_post",
            tags=tags,
            summary="UserInfo (POST)",
            description=described + ", or the form's access_token (RFC 6750 section 2.2).",
            examples=userinfo_errors,
            cors=self.cors,
        )(self.userinfo_post)
        client_errors = (
            oauth_example(OAuthInvalidRequest("token is required")),
            oauth_example(InvalidClient("example", challenge="Basic")),
        )
        api.operation(
            "POST",
            REVOCATION_PATH,
            raw_body={FORM: PresentedTokenForm},
            status=200,
            responses={
                200: "Revoked, or not a token of the client (nothing changed)",
                400: OAuthErrorBody,
                401: OAuthErrorBody,
            },
            operation_id="revoke_token",
            tags=tags,
            summary="Token revocation",
            description="RFC 7009: a refresh or access token of the authenticated client "
            "revokes every token issued with it (the whole grant); any other token is answered "
            "200 too, and changes nothing.",
            examples=docs.error_examples(*client_errors),
            cors=self.cors,
        )(self.revoke)
        api.operation(
            "POST",
            INTROSPECTION_PATH,
            raw_body={FORM: PresentedTokenForm},
            response=TokenIntrospection,
            responses={
                400: OAuthErrorBody,
                401: OAuthErrorBody,
                403: OAuthErrorBody,
                429: OAuthErrorBody,
            },
            operation_id="introspect_token",
            tags=tags,
            summary="Token introspection",
            description="RFC 7662, for clients registered with introspection: true: whether an "
            'access, refresh or session token is active, and what it says; {"active": false} '
            "for anything else.",
            examples=docs.error_examples(
                *client_errors,
                oauth_example(ClientNotAllowed("this client may not introspect tokens")),
                oauth_example(OAuthRateLimited(1)),
            ),
        )(self.introspect)

    # -- userinfo ---------------------------------------------------------------------------

    async def userinfo(self, call: Call[None]) -> Reply[UserInfo]:
        await self._within_limit(call.request)
        return await self._userinfo(call.request, {})

    async def userinfo_post(self, call: Call[bytes]) -> Reply[UserInfo]:
        await self._within_limit(call.request)
        form = oauth_form(call.request.content_type, call.body) if call.body else {}
        return await self._userinfo(call.request, form)

    async def _userinfo(self, request: web.Request, form: Mapping[str, str]) -> Reply[UserInfo]:
        token = bearer_token(request.headers.get("Authorization"), form)
        try:
            active = await self.access.access_token(token)
        except TokenInactive as e:
            raise InvalidAccessToken(str(e)) from None
        client = self.clients.get(active.claims.client_id)
        if client is not None:
            admit_client(request, client)
        if OPENID not in active.claims.scopes:
            raise InsufficientScope(OPENID)
        return Reply(userinfo_claims(active.account, active.claims.scopes), headers=NO_STORE)

    async def _within_limit(self, request: web.Request) -> None:
        """Raises the 429 when this client address spent its ``ratelimit.userinfo``."""
        if self.userinfo_limiter is None:
            return
        decision = await self.userinfo_limiter.hit(
            self.client_address.limit_key(self.client_address.of(request))
        )
        if not decision.allowed:
            raise BearerRateLimited(decision.retry_after_seconds)

    # -- revocation and introspection -------------------------------------------------------

    async def _client(self, call: Call[bytes]) -> tuple[Client, dict[str, str]]:
        form = oauth_form(call.request.content_type, call.body)
        client = await self.client_auth.authenticate(
            call.request.headers.get("Authorization"), form
        )
        return client, form

    async def revoke(self, call: Call[bytes]) -> Reply[None]:
        client, form = await self._client(call)
        admit_client(call.request, client)
        await self.access.revoke(client, _token(form))
        return Reply(None, status=200, headers=NO_STORE)

    async def introspect(self, call: Call[bytes]) -> Reply[TokenIntrospection]:
        client, form = await self._client(call)
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
        described = await self.access.describe(_token(form))
        return Reply(introspection_of(described), headers=NO_STORE)


def _token(form: Mapping[str, Any]) -> str:
    token = form.get("token")
    if not isinstance(token, str) or not token:
        raise OAuthInvalidRequest("token is required")
    return token
