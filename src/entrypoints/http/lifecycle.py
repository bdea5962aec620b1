"""The account lifecycle: the caller's account, unlinking a provider, signing out.

* ``GET /v1/account``: the caller's account (id, email and whether it is verified, name,
  created, last sign-in, linked providers); scope ``account:read`` or ``account:manage``.
* ``DELETE /v1/account/providers/{provider}``: unlinks a provider; scope ``account:manage``;
  409 ``last_provider`` rather than removing the last one (its owner could never sign in again),
  404 ``provider_not_linked`` when the account holds no identity there. Answers the providers
  that remain.
* ``POST /v1/auth/logout``: clears the ``session`` cookie and the ``authgate_binding`` cookie.
  The session JWT is stateless: a copy of it stays valid until it expires.

**The session cookie as a credential.** A browser page cannot read the HttpOnly ``session``
cookie, so it cannot send it as a bearer token. The account endpoints therefore accept, besides
``Authorization: Bearer``, the cookie itself: the ``sessionCookie`` scheme (an API key in the
``session`` cookie, verified exactly like the bearer token). When both are present the bearer
token is used.

**CSRF.** A browser attaches cookies to requests that other sites cause, so a request that
changes something and is authenticated by the cookie must prove that it comes from the
service's own pages. :class:`SameOriginGuard` accepts it only when the browser says so:
``Sec-Fetch-Site``, when sent, must be ``same-origin``; ``Origin``, when sent, must be the
service's own origin (the request's ``Host``) or one of the trusted origins (``app.url``'s);
and at least one of the two must be present — every current browser sends ``Origin`` on a
``POST`` or ``DELETE``, and a non-browser client has no reason to use the cookie instead of the
bearer token. This holds whatever the cookie's ``SameSite`` attribute and without a token to
keep in the page; a cross-site HTML form cannot send ``DELETE`` at all, and a cross-site
``fetch`` carries a foreign ``Origin``. Requests authenticated by the bearer token need no
check: a browser never adds that header on its own.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import attrs

from authgate.domain.model import LinkedIdentity
from authgate.entrypoints.http.auth import SESSION_COOKIE, SameOriginGuard, SessionVerifier
from authgate.entrypoints.http.bodies import AppError, LinkedProvider, LinkedProviders
from authgate.entrypoints.http.errors import app_error
from authgate.entrypoints.http.signin import BINDING_COOKIE, BINDING_PATH, LEGACY_BINDING_COOKIE
from authgate.entrypoints.rest import (
    Api,
    ApiKey,
    BearerJWT,
    Call,
    Cookie,
    HttpError,
    InvalidCredential,
    Principal,
    Reply,
    path,
    pattern,
    wire_field,
)
from authgate.ports.accounts import AccountRepository, LastIdentityError
from authgate.ports.sessions import InvalidSession

SESSION_COOKIE_SCHEME = "sessionCookie"
READ_SCOPES = ("account:read", "account:manage")
MANAGE_SCOPE = "account:manage"
NO_STORE = {"Cache-Control": "no-store"}


@attrs.frozen
class AccountDetails:
    """The caller's account. ``emailVerified`` is true only when the provider of the primary
    identity said the email address is verified; false when it said false, did not say (the
    facebook-shaped profile endpoint) or gave no address."""

    id: str
    created_at: dt.datetime = wire_field("createdAt")
    providers: list[LinkedProvider] = wire_field("providers")
    email_verified: bool = wire_field("emailVerified")
    email: str | None = None
    name: str | None = None
    last_sign_in_at: dt.datetime | None = wire_field("lastSignInAt", default=None)


class SessionCookieChecker:
    """An :class:`~authgate.entrypoints.rest.ApiKeyChecker` over the session JWT."""

    def __init__(self, verifier: SessionVerifier) -> None:
        self._verifier = verifier

    async def check(self, key: str) -> Principal:
        try:
            claims = self._verifier.claims(key)
        except InvalidSession as e:
            raise InvalidCredential(str(e)) from None
        return Principal(
            subject=claims.account_id, scheme=SESSION_COOKIE_SCHEME, claims=claims.claims
        )


def session_cookie_scheme(verifier: SessionVerifier) -> ApiKey:
    """The ``sessionCookie`` security scheme: the ``session`` cookie as the credential."""
    return ApiKey(SESSION_COOKIE_SCHEME, SESSION_COOKIE, SessionCookieChecker(verifier), True)


def linked_provider(linked: LinkedIdentity) -> LinkedProvider:
    """Spec 2.2's record of one linked identity."""
    return LinkedProvider(
        provider=linked.identity.provider,
        provider_id=f"user:{linked.identity.provider}:{linked.identity.subject}",
        linked_at=linked.linked_at,
        is_primary=linked.is_primary,
    )


def _require_scope(principal: Principal, *any_of: str) -> None:
    # The bearer scheme checks scopes itself; the cookie scheme (an API key) does not.
    if not principal.scopes & set(any_of):
        raise HttpError(
            403,
            {
                "error": "insufficient_scope",
                "message": "the token lacks the required scope: one of " + ", ".join(any_of),
            },
        )


class LifecycleOperations:
    """Registers the account-lifecycle operations on an API."""

    def __init__(
        self,
        accounts: AccountRepository,
        providers: Sequence[str],
        bearer: BearerJWT,
        cookie: ApiKey,
        guard: SameOriginGuard,
    ) -> None:
        self.accounts = accounts
        self.providers = tuple(providers)
        self.bearer = bearer
        self.cookie = cookie
        self.guard = guard

    def register(self, api: Api) -> None:
        api.operation(
            "GET",
            "/v1/account",
            response=AccountDetails,
            security=[self.bearer.with_scopes(*READ_SCOPES), self.cookie],
            responses={404: AppError},
            operation_id="get_account",
            tags=("account",),
        )(self.account)
        api.operation(
            "DELETE",
            "/v1/account/providers/{provider}",
            params=[path("provider", pattern(r"^[a-z][a-z0-9_-]{0,63}$"))],
            response=LinkedProviders,
            security=[self.bearer.with_scopes(MANAGE_SCOPE), self.cookie],
            responses={403: AppError, 404: AppError, 409: AppError},
            operation_id="unlink_provider",
            tags=("account",),
        )(self.unlink)
        api.operation(
            "POST",
            "/v1/auth/logout",
            status=204,
            responses={
                204: "Signed out: the session and binding cookies are cleared",
                403: AppError,
            },
            operation_id="sign_out",
            tags=("sign-in",),
        )(self.logout)

    def _caller(self, call: Call[None], *scopes: str) -> str:
        principal = call.principal
        assert principal is not None
        if principal.scheme == SESSION_COOKIE_SCHEME:
            _require_scope(principal, *scopes)
        return principal.subject

    # -- GET /v1/account --------------------------------------------------------------------

    async def account(self, call: Call[None]) -> Reply[AccountDetails]:
        account_id = self._caller(call, *READ_SCOPES)
        account = await self.accounts.get(account_id)
        if account is None:
            raise app_error(404, "account_not_found", "the signed-in account no longer exists")
        identities = await self.accounts.list_identities(account_id)
        details = AccountDetails(
            id=account.id,
            email=account.email,
            # False without an address whatever was stored: nothing to vouch for.
            email_verified=account.email is not None and account.email_verified,
            name=account.name,
            created_at=account.created_at,
            last_sign_in_at=account.last_login_at,
            providers=[linked_provider(i) for i in identities],
        )
        return Reply(details, headers=NO_STORE)

    # -- DELETE /v1/account/providers/{provider} ----------------------------------------------

    async def unlink(self, call: Call[None]) -> Reply[LinkedProviders]:
        assert call.principal is not None
        if call.principal.scheme == SESSION_COOKIE_SCHEME:
            self.guard.check(call.request)
        account_id = self._caller(call, MANAGE_SCOPE)
        provider = call.path["provider"]
        try:
            removed = await self.accounts.unlink_identity(account_id, provider)
        except LastIdentityError:
            raise app_error(
                409,
                "last_provider",
                f"'{provider}' is the account's only linked provider; link another one before "
                "removing it",
            ) from None
        if not removed:
            if provider not in self.providers:
                raise app_error(
                    400,
                    "invalid_provider",
                    f"unsupported provider '{provider}'; valid providers: "
                    + ", ".join(self.providers),
                )
            raise app_error(
                404, "provider_not_linked", f"provider '{provider}' is not linked to this account"
            )
        remaining = await self.accounts.list_identities(account_id)
        return Reply(LinkedProviders([linked_provider(i) for i in remaining]), headers=NO_STORE)

    # -- POST /v1/auth/logout ---------------------------------------------------------------

    async def logout(self, call: Call[None]) -> Reply[None]:
        request = call.request
        legacy, legacy_path = LEGACY_BINDING_COOKIE
        if any(c in request.cookies for c in (SESSION_COOKIE, BINDING_COOKIE, legacy)):
            self.guard.check(request)
        cleared = (
            Cookie(SESSION_COOKIE, "", max_age=0),
            Cookie(BINDING_COOKIE, "", max_age=0, path=BINDING_PATH, samesite="None"),
            Cookie(legacy, "", max_age=0, path=legacy_path, samesite="None"),
        )
        return Reply(None, status=204, headers=NO_STORE, cookies=cleared)
