"""The caller's account: every ``/v1/account*`` operation.

* ``GET /v1/account/providers`` (spec 4.4): the caller's linked providers; the bearer JWT only
  (spec 2.9: one security requirement), scope ``account:read`` or ``account:manage``.
* ``GET /v1/account``: the account (id, email and whether it is verified, name, created, last
  sign-in, linked providers); bearer or session cookie, scope ``account:read`` or
  ``account:manage``.
* ``DELETE /v1/account/providers/{provider}``: unlinks a provider, answers those that remain,
  and ends the sessions issued through it; scope ``account:manage``; with the cookie, the
  same-origin guard; a recent sign-in (RFC 9470).
* ``GET /v1/account/sessions``: the caller's live sessions (``current`` marks the caller's).
* ``DELETE /v1/account/sessions/{id}``: ends one (another than the caller's own needs a recent
  sign-in); ``DELETE /v1/account/sessions``: ends every one but the caller's ("sign out
  everywhere else", a recent sign-in). Scope ``account:manage``; with the cookie, the guard.

The rules (which provider may go, the last one never) are the :class:`AccountService`'s;
failures map to HTTP in :mod:`authgate.entrypoints.http.errors`.
"""

from __future__ import annotations

from authgate.domain import errors
from authgate.domain.model import LinkedIdentity
from authgate.domain.scopes import ACCOUNT_MANAGE, READ_SCOPES
from authgate.entrypoints.http.bodies import (
    AccountDetails,
    AppError,
    LinkedProvider,
    LinkedProviders,
    SessionInfo,
    SessionList,
)
from authgate.entrypoints.http.errors import http_error
from authgate.entrypoints.http.session_auth import (
    SESSION_COOKIE_SCHEME,
    SameOriginGuard,
    auth_time_of,
    session_id_of,
)
from authgate.entrypoints.rest import (
    Api,
    ApiKey,
    BearerJWT,
    Call,
    Principal,
    Reply,
    path,
    pattern,
)
from authgate.services.account import AccountService

NO_STORE = {"Cache-Control": "no-store"}


def linked_provider(linked: LinkedIdentity) -> LinkedProvider:
    """Spec 2.2's record of one linked identity (never a provider token)."""
    return LinkedProvider(
        provider=linked.identity.provider,
        provider_id=f"user:{linked.identity.provider}:{linked.identity.subject}",
        linked_at=linked.linked_at,
        is_primary=linked.is_primary,
    )


class AccountOperations:
    """Registers the account operations on an API."""

    def __init__(
        self,
        service: AccountService,
        bearer: BearerJWT,
        cookie: ApiKey,
        guard: SameOriginGuard,
    ) -> None:
        self.service = service
        self.bearer = bearer
        self.cookie = cookie
        self.guard = guard

    def register(self, api: Api) -> None:
        # Spec 4.4 and 2.9: the bearer JWT only (one security requirement). Browser pages,
        # whose session cookie is HttpOnly, read the same list from GET /v1/account.
        api.operation(
            "GET",
            "/v1/account/providers",
            response=LinkedProviders,
            security=[self.bearer.with_scopes(*READ_SCOPES)],
            operation_id="list_linked_providers",
            tags=("account",),
        )(self.linked_providers)
        api.operation(
            "GET",
            "/v1/account",
            response=AccountDetails,
            security=[self.bearer.with_scopes(*READ_SCOPES), self.cookie.with_scopes(*READ_SCOPES)],
            responses={404: AppError},
            operation_id="get_account",
            tags=("account",),
        )(self.account)
        api.operation(
            "DELETE",
            "/v1/account/providers/{provider}",
            params=[path("provider", pattern(r"^[a-z][a-z0-9_-]{0,63}$"))],
            response=LinkedProviders,
            security=[
                self.bearer.with_scopes(ACCOUNT_MANAGE),
                self.cookie.with_scopes(ACCOUNT_MANAGE),
            ],
            responses={401: AppError, 403: AppError, 404: AppError, 409: AppError},
            operation_id="unlink_provider",
            tags=("account",),
        )(self.unlink)
        api.operation(
            "GET",
            "/v1/account/sessions",
            response=SessionList,
            security=[self.bearer.with_scopes(*READ_SCOPES), self.cookie.with_scopes(*READ_SCOPES)],
            operation_id="list_sessions",
            tags=("account",),
        )(self.list_sessions)
        api.operation(
            "DELETE",
            "/v1/account/sessions/{id}",
            params=[path("id", pattern(r"^[A-Za-z0-9_-]{1,64}$"))],
            status=204,
            security=[
                self.bearer.with_scopes(ACCOUNT_MANAGE),
                self.cookie.with_scopes(ACCOUNT_MANAGE),
            ],
            responses={204: "The session is ended", 401: AppError, 403: AppError, 404: AppError},
            operation_id="end_session",
            tags=("account",),
        )(self.end_session)
        api.operation(
            "DELETE",
            "/v1/account/sessions",
            status=204,
            security=[
                self.bearer.with_scopes(ACCOUNT_MANAGE),
                self.cookie.with_scopes(ACCOUNT_MANAGE),
            ],
            responses={
                204: "Every session but the caller's is ended",
                401: AppError,
                403: AppError,
            },
            operation_id="end_other_sessions",
            tags=("account",),
        )(self.end_other_sessions)

    @staticmethod
    def _caller(call: Call[None]) -> Principal:
        """The authenticated caller (the operation's security schemes checked it and its
        scopes)."""
        assert call.principal is not None
        return call.principal

    # -- GET /v1/account/providers ------------------------------------------------------------

    async def linked_providers(self, call: Call[None]) -> LinkedProviders:
        linked = await self.service.linked_providers(self._caller(call).subject)
        return LinkedProviders([linked_provider(i) for i in linked])

    # -- GET /v1/account ------------------------------------------------------------------

    async def account(self, call: Call[None]) -> Reply[AccountDetails]:
        try:
            view = await self.service.account(self._caller(call).subject)
        except errors.SignInError as e:
            raise http_error(e) from None
        account = view.account
        details = AccountDetails(
            id=account.id,
            email=account.email,
            email_verified=account.email_verified,
            name=account.name,
            created_at=account.created_at,
            last_sign_in_at=account.last_login_at,
            providers=[linked_provider(i) for i in view.identities],
        )
        return Reply(details, headers=NO_STORE)

    # -- DELETE /v1/account/providers/{provider} ----------------------------------------------

    async def unlink(self, call: Call[None]) -> Reply[LinkedProviders]:
        caller = self._caller(call)
        if caller.scheme == SESSION_COOKIE_SCHEME:
            self.guard.check(call.request)
        try:
            self.service.sessions.require_recent_authentication(auth_time_of(caller))
            remaining = await self.service.unlink(
                caller.subject, call.path["provider"], current=session_id_of(caller)
            )
        except errors.SignInError as e:
            raise http_error(e) from None
        return Reply(LinkedProviders([linked_provider(i) for i in remaining]), headers=NO_STORE)

    # -- /v1/account/sessions ---------------------------------------------------------------

    async def list_sessions(self, call: Call[None]) -> Reply[SessionList]:
        caller = self._caller(call)
        current = session_id_of(caller)
        live = await self.service.live_sessions(caller.subject)
        listed = [
            SessionInfo(
                id=r.id,
                provider=r.provider,
                created_at=r.created_at,
                expires_at=r.expires_at,
                current=r.id == current,
                user_agent=r.user_agent,
                address=r.client_address,
            )
            for r in live
        ]
        return Reply(SessionList(listed), headers=NO_STORE)

    async def end_session(self, call: Call[None]) -> Reply[None]:
        principal = self._changing(call)
        try:
            await self.service.end_session(
                principal.subject,
                call.path["id"],
                current=session_id_of(principal),
                auth_time=auth_time_of(principal),
            )
        except errors.SignInError as e:
            raise http_error(e) from None
        return Reply(None, status=204, headers=NO_STORE)

    async def end_other_sessions(self, call: Call[None]) -> Reply[None]:
        principal = self._changing(call)
        try:
            await self.service.end_other_sessions(
                principal.subject,
                current=session_id_of(principal),
                auth_time=auth_time_of(principal),
            )
        except errors.SignInError as e:
            raise http_error(e) from None
        return Reply(None, status=204, headers=NO_STORE)

    def _changing(self, call: Call[None]) -> Principal:
        """The caller of an account change (the schemes checked the manage scope), and the
        same-origin guard when the cookie is the credential."""
        principal = self._caller(call)
        if principal.scheme == SESSION_COOKIE_SCHEME:
            self.guard.check(call.request)
        return principal
