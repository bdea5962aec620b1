"""``GET``/``POST /oauth2/userinfo`` (OpenID Connect Core section 5.3): the access token as
``Authorization: Bearer`` or the form's ``access_token`` (RFC 6750 section 2), never both;
refusals are RFC 6750's. Counted per client address against ``ratelimit.userinfo`` first.

Only a person's token whose audience includes its client is served: a client's own token
(``client_credentials``) speaks for nobody, and a token issued for resource servers (RFC 8707
``resource``) is for those servers, not for userinfo; both are ``invalid_token``. A client
that needs userinfo too gets its token from an authorization request without ``resource``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from aiohttp import web

from authgate.domain.model import Account
from authgate.domain.openid.refusals import (
    BearerInvalidRequest,
    BearerRateLimited,
    InsufficientScope,
    InvalidAccessToken,
    NoAccessToken,
)
from authgate.entrypoints.http.common.bodies import FORM, OAuthErrorBody, oauth_form
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.errors import OAUTH_NO_STORE, oauth_example
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.openid.cors import PublicClientCors, admit_client
from authgate.entrypoints.http.openid.discovery import USERINFO_PATH, ProviderOperations
from authgate.entrypoints.http.openid.pages import any_address
from authgate.entrypoints.rest import Call, Reply
from authgate.ports.ratelimit import RateLimiter
from authgate.services.openid.access import TokenAccess, TokenInactive

OPENID = "openid"
_DESCRIBED = (
    "The claims of the person an access token speaks for: sub, and email, email_verified "
    "(scope email) and name (scope profile) where the account has them. The access token as "
    "the Authorization header's Bearer token"
)


@attrs.frozen
class UserInfo:
    """``sub`` and the claims the token's scopes cover that the account has (a claim without a
    value is left out: OpenID Connect Core section 5.3.2)."""

    sub: str
    name: str | None = None
    email: str | None = None
    email_verified: bool | None = None


@attrs.frozen
class UserInfoForm:
    """A userinfo ``POST`` may carry the access token in its form instead of the header."""

    access_token: str | None = None


def userinfo_claims(account: Account, scopes: tuple[str, ...]) -> UserInfo:
    """``sub`` and the claims ``scopes`` cover that ``account`` has."""
    email = account.email if "email" in scopes else None
    return UserInfo(
        sub=account.id,
        name=account.name if "profile" in scopes else None,
        email=email,
        email_verified=account.email_verified if email is not None else None,
    )


def bearer_token(authorization: str | None, form: Mapping[str, str]) -> str:
    """The access token: ``Authorization: Bearer`` or the form's ``access_token``, exactly
    one (RFC 6750 section 2)."""
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


_DECLARATION: dict[str, Any] = {
    "response": UserInfo,
    "responses": {status: OAuthErrorBody for status in (400, 401, 403, 429)},
    "refusals": (
        oauth_example(BearerInvalidRequest("the access token was sent in more than one way")),
        oauth_example(InvalidAccessToken("example")),
        oauth_example(InsufficientScope(OPENID)),
        oauth_example(BearerRateLimited(1)),
    ),
}


@attrs.define(slots=False, eq=False)
class UserInfoOperations(ProviderOperations):
    """The userinfo endpoint (``GET`` and ``POST``)."""

    access: TokenAccess
    cors: PublicClientCors
    limiter: RateLimiter | None = None  # ratelimit.userinfo, per client address
    client_address: ClientAddress = attrs.field(default=None, converter=any_address)

    @operation(
        "GET",
        USERINFO_PATH,
        operation_id="userinfo",
        summary="UserInfo",
        description=_DESCRIBED + " (OpenID Connect Core 1.0 section 5.3).",
        **_DECLARATION,
    )
    async def userinfo(self, call: Call[None]) -> Reply[UserInfo]:
        await self._within_limit(call.request)
        return await self._userinfo(call.request, {})

    @operation(
        "POST",
        USERINFO_PATH,
        raw_body={FORM: UserInfoForm},
        operation_id="userinfo_post",
        summary="UserInfo (POST)",
        description=_DESCRIBED + ", or the form's access_token (RFC 6750 section 2.2).",
        **_DECLARATION,
    )
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
        if active.client.client_id not in active.claims.audiences:
            raise InvalidAccessToken("the token is for resource servers, not for userinfo")
        admit_client(request, active.client)
        if OPENID not in active.claims.scopes:
            raise InsufficientScope(OPENID)
        return Reply(userinfo_claims(active.account, active.claims.scopes), headers=OAUTH_NO_STORE)

    async def _within_limit(self, request: web.Request) -> None:
        """Raises the 429 when this client address spent its ``ratelimit.userinfo``."""
        if self.limiter is None:
            return
        decision = await self.limiter.hit(
            self.client_address.limit_key(self.client_address.of(request))
        )
        if not decision.allowed:
            raise BearerRateLimited(decision.retry_after_seconds)
