"""The caller's account: every ``/v1/account*`` operation.

* ``GET /v1/account/providers`` (spec 4.4): the caller's linked providers; the bearer JWT only
  (spec 2.9: one security requirement), scope ``account:read`` or ``account:manage``.
* ``GET /v1/account``: the account (id, email and whether it is verified, name, created, last
  sign-in, linked providers); bearer or session cookie, scope ``account:read`` or
  ``account:manage``.
* ``DELETE /v1/account/providers/{provider}``: unlinks a provider, answers those that remain,
  and ends the sessions issued through it (but the caller's own).
* ``GET /v1/account/sessions``: the caller's live sessions (``current`` marks the caller's).
* ``DELETE /v1/account/sessions/{id}``: ends one; ``DELETE /v1/account/sessions``: ends every
  one but the caller's ("sign out everywhere else"; ``remove_passkeys=true``: and removes the
  passkeys those sessions added).
* ``DELETE /v1/account``: deletes the account (identities, sessions), clears the cookies; 204.
* ``GET /v1/account/export``: everything stored about the caller, as one document.

Changes take scope ``account:manage`` and, with the cookie as the credential, the same-origin
guard. Linking, unlinking, ending *other* sessions, deleting and exporting need a recent
sign-in (RFC 9470: 401 ``reauthentication_required``). The rules are the services'; failures
map to HTTP in :mod:`authgate.entrypoints.http.common.errors`.
"""

from __future__ import annotations

import base64
from typing import Any

from authgate.domain import errors
from authgate.domain.model import UNPROVEN_AUTH_TIME, Caller, ClientInfo, LinkedIdentity
from authgate.domain.passkeys import Passkey
from authgate.domain.scopes import ACCOUNT_MANAGE, READ_SCOPES
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import (
    AccountDetails,
    AccountExportBody,
    AppError,
    AuditRecord,
    GrantExport,
    LinkedProvider,
    LinkedProviders,
    PasskeyExport,
    PasskeyInfo,
    SessionInfo,
    SessionList,
    SessionRecordExport,
)
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.docs import describe_tags
from authgate.entrypoints.http.common.session_auth import (
    SESSION_COOKIE,
    SESSION_COOKIE_SCHEME,
    SameOriginGuard,
    auth_time_of,
    session_id_of,
)
from authgate.entrypoints.http.signin import BINDING_COOKIE, BINDING_PATH
from authgate.entrypoints.rest import (
    Api,
    ApiKey,
    BearerJWT,
    Call,
    Cookie,
    Cors,
    Principal,
    Reply,
    path,
    pattern,
    query,
)
from authgate.entrypoints.rest.security import SecurityScheme
from authgate.services.account import AccountService, AccountView

NO_STORE = {"Cache-Control": "no-store"}


def linked_provider(linked: LinkedIdentity) -> LinkedProvider:
    """Spec 2.2's record of one linked identity (never a provider token)."""
    return LinkedProvider(
        provider=linked.identity.provider,
        provider_id=linked.identity.provider_id,
        linked_at=linked.linked_at,
        is_primary=linked.is_primary,
    )


def passkey_info(p: Passkey) -> PasskeyInfo:
    """What the account's owner sees of a passkey (never its key)."""
    return PasskeyInfo(
        id=p.id,
        name=p.name,
        created_at=p.created_at,
        backed_up=p.backed_up,
        backup_eligible=p.backup_eligible,
        transports=list(p.transports),
        aaguid=p.aaguid,
        last_used_at=p.last_used_at,
        added_by_session=p.added_by_session,
        added_from_address=p.added_from_address,
        added_from_user_agent=p.added_from_user_agent,
    )


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def account_details(view: AccountView) -> AccountDetails:
    account = view.account
    return AccountDetails(
        id=account.id,
        email=account.email,
        email_verified=account.email_verified,
        name=account.name,
        created_at=account.created_at,
        last_sign_in_at=account.last_login_at,
        providers=[linked_provider(i) for i in view.identities],
    )


def caller_of(
    call: Call[Any], guard: SameOriginGuard, client_address: ClientAddress, *, change: bool
) -> Caller:
    """Who calls an account operation, from where; for a change, the same-origin guard when
    the cookie is the credential."""
    principal = call.principal
    assert principal is not None  # the operation's schemes checked it and its scopes
    if change and principal.scheme == SESSION_COOKIE_SCHEME:
        guard.check(call.request)
    provider = principal.claims.get("provider")
    request = call.request
    return Caller(
        account_id=principal.subject,
        session_id=session_id_of(principal),
        provider=provider if isinstance(provider, str) else "",
        auth_time=auth_time_of(principal),
        client=ClientInfo(client_address.of(request), request.headers.get("User-Agent")),
    )


class AccountArea:
    """What the operations on the caller's account share (the account's own, its
    applications, its passkeys): who may read (``account:read`` or ``account:manage``) and who
    may change (``account:manage``), by bearer token or session cookie; the same-origin guard
    of a change made with the cookie; the client's address for the audit trail; and CORS, as
    the application's pages on other origins call every one of them."""

    def __init__(
        self,
        bearer: BearerJWT,
        cookie: ApiKey,
        guard: SameOriginGuard,
        client_address: ClientAddress,
        cors: Cors | None = None,
    ) -> None:
        self.guard = guard
        self.client_address = client_address
        self.cors = cors
        self.read: list[SecurityScheme] = [
            bearer.with_scopes(*READ_SCOPES),
            cookie.with_scopes(*READ_SCOPES),
        ]
        self.manage: list[SecurityScheme] = [
            bearer.with_scopes(ACCOUNT_MANAGE),
            cookie.with_scopes(ACCOUNT_MANAGE),
        ]

    def _caller(self, call: Call[Any], *, change: bool) -> Caller:
        return caller_of(call, self.guard, self.client_address, change=change)


class AccountOperations(AccountArea):
    """Registers the account operations on an API."""

    def __init__(
        self,
        service: AccountService,
        bearer: BearerJWT,
        cookie: ApiKey,
        guard: SameOriginGuard,
        client_address: ClientAddress,
        cors: Cors | None = None,
    ) -> None:
        super().__init__(bearer, cookie, guard, client_address, cors)
        self.service = service

    def register(self, api: Api) -> None:
        describe_tags(api, docs.ACCOUNT)
        configured = list(self.service.providers)  # the configuration's, at registration
        example_provider = configured[0] if configured else "google"
        bad_provider = docs.unknown_provider(configured)
        read_scope = docs.insufficient_scope(*READ_SCOPES)
        manage_scope = docs.insufficient_scope(ACCOUNT_MANAGE)
        # Spec 4.4 and 2.9: the bearer JWT only (one security requirement). Browser pages,
        # whose session cookie is HttpOnly, read the same list from GET /v1/account.
        api.operation(
            "GET",
            "/v1/account/providers",
            response=LinkedProviders,
            security=self.read[:1],
            operation_id="list_linked_providers",
            tags=(docs.ACCOUNT,),
            summary="List linked providers",
            description="The identity providers linked to the caller's account (bearer token only; "
            "scope account:read or account:manage).",
            examples=docs.error_examples(docs.NO_CREDENTIAL, docs.BAD_TOKEN, read_scope),
            cors=self.cors,
        )(self.linked_providers)
        api.operation(
            "GET",
            "/v1/account",
            response=AccountDetails,
            security=self.read,
            responses={404: AppError},
            operation_id="get_account",
            tags=(docs.ACCOUNT,),
            summary="Get the account",
            description="The caller's account: id, email and whether it is verified, name, when it "
            "was created and last signed in, and its linked providers.",
            examples=docs.error_examples(docs.NO_CREDENTIAL, read_scope, errors.AccountGone()),
            cors=self.cors,
        )(self.account)
        api.operation(
            "DELETE",
            "/v1/account/providers/{provider}",
            params=[
                path(
                    "provider",
                    pattern(r"^[a-z][a-z0-9_-]{0,63}$"),
                    description="A linked provider of the caller: one of the configured "
                    + ", ".join(configured)
                    + ".",
                    examples=configured,
                )
            ],
            response=LinkedProviders,
            security=self.manage,
            responses={401: AppError, 403: AppError, 404: AppError, 409: AppError},
            operation_id="unlink_provider",
            tags=(docs.ACCOUNT,),
            summary="Unlink a provider",
            description="Unlinks a provider from the caller's account and answers the providers "
            "that remain; the sessions signed in through it end (but the caller's own). The last "
            "provider cannot be unlinked. Needs a recent sign-in.",
            examples=docs.error_examples(
                bad_provider,
                docs.NO_CREDENTIAL,
                docs.STEP_UP,
                manage_scope,
                docs.CROSS_SITE,
                errors.IdentityNotLinked(example_provider),
                errors.AccountGone(),
                errors.LastIdentity(example_provider),
            ),
            cors=self.cors,
        )(self.unlink)
        api.operation(
            "GET",
            "/v1/account/sessions",
            response=SessionList,
            security=self.read,
            operation_id="list_sessions",
            tags=(docs.ACCOUNT,),
            summary="List sessions",
            description="The caller's live sessions; current marks the caller's own.",
            examples=docs.error_examples(docs.NO_CREDENTIAL, read_scope),
            cors=self.cors,
        )(self.list_sessions)
        api.operation(
            "DELETE",
            "/v1/account/sessions/{id}",
            params=[
                path(
                    "id",
                    pattern(r"^[A-Za-z0-9_-]{1,64}$"),
                    description="The id of one of the caller's sessions, as GET "
                    "/v1/account/sessions lists it.",
                )
            ],
            status=204,
            security=self.manage,
            responses={204: "The session is ended", 401: AppError, 403: AppError, 404: AppError},
            operation_id="end_session",
            tags=(docs.ACCOUNT,),
            summary="End a session",
            description="Ends one of the caller's sessions (sign a device out). Ending another "
            "session needs a recent sign-in.",
            examples=docs.error_examples(
                docs.NO_CREDENTIAL,
                docs.STEP_UP,
                manage_scope,
                docs.CROSS_SITE,
                errors.SessionNotFound(),
            ),
            cors=self.cors,
        )(self.end_session)
        api.operation(
            "DELETE",
            "/v1/account/sessions",
            params=[
                query(
                    "remove_passkeys",
                    pattern(r"^(true|false)$"),
                    description="true: also remove the passkeys the ended sessions added (but "
                    "the one the caller's session signed in with); false or absent: passkeys "
                    "stay.",
                    examples=["false", "true"],
                )
            ],
            status=204,
            security=self.manage,
            responses={
                204: "Every session but the caller's is ended",
                401: AppError,
                403: AppError,
                409: AppError,
            },
            operation_id="end_other_sessions",
            tags=(docs.ACCOUNT,),
            summary="End every other session",
            description="Ends every session of the account but the caller's (sign out everywhere "
            "else); with remove_passkeys=true, the passkeys those sessions added go too, in the "
            "same transaction, unless that would leave the account no way to sign in (409, "
            "nothing changed). Needs a recent sign-in.",
            examples=docs.error_examples(
                docs.NO_CREDENTIAL,
                docs.STEP_UP,
                manage_scope,
                docs.CROSS_SITE,
                errors.LastSignInMethod(),
            ),
            cors=self.cors,
        )(self.end_other_sessions)
        api.operation(
            "DELETE",
            "/v1/account",
            status=204,
            security=self.manage,
            responses={
                204: "The account, its identities and sessions are deleted; cookies cleared",
                401: AppError,
                403: AppError,
                404: AppError,
            },
            operation_id="delete_account",
            tags=(docs.ACCOUNT,),
            summary="Delete the account",
            description="Deletes the account with its identities and sessions and clears the "
            "cookies. Needs a recent sign-in.",
            examples=docs.error_examples(
                docs.NO_CREDENTIAL,
                docs.STEP_UP,
                manage_scope,
                docs.CROSS_SITE,
                errors.AccountGone(),
            ),
            cors=self.cors,
        )(self.delete_account)
        api.operation(
            "GET",
            "/v1/account/export",
            response=AccountExportBody,
            security=self.read,
            responses={401: AppError, 404: AppError},
            operation_id="export_account",
            tags=(docs.ACCOUNT,),
            summary="Export the account",
            description="Everything stored about the caller (account, identities, sessions, audit "
            "records, consents to applications, passkeys) as one document. Needs a recent sign-in.",
            examples=docs.error_examples(
                docs.NO_CREDENTIAL, docs.STEP_UP, read_scope, errors.AccountGone()
            ),
            cors=self.cors,
        )(self.export)

    @staticmethod
    def _principal(call: Call[None]) -> Principal:
        """The authenticated caller (the operation's schemes checked it and its scopes)."""
        assert call.principal is not None
        return call.principal

    # -- reading ----------------------------------------------------------------------------

    async def linked_providers(self, call: Call[None]) -> LinkedProviders:
        linked = await self.service.linked_providers(self._principal(call).subject)
        return LinkedProviders([linked_provider(i) for i in linked])

    async def account(self, call: Call[None]) -> Reply[AccountDetails]:
        view = await self.service.account(self._principal(call).subject)
        return Reply(account_details(view), headers=NO_STORE)

    async def list_sessions(self, call: Call[None]) -> Reply[SessionList]:
        principal = self._principal(call)
        current = session_id_of(principal)
        live = await self.service.live_sessions(principal.subject)
        listed = [
            SessionInfo(
                id=r.id,
                provider=r.provider,
                created_at=r.created_at,
                expires_at=r.expires_at,
                current=r.id == current,
                user_agent=r.user_agent,
                address=r.client_address,
                auth_time_proven=r.auth_time > UNPROVEN_AUTH_TIME,
                passkey_id=r.passkey_id,
            )
            for r in live
        ]
        return Reply(SessionList(listed), headers=NO_STORE)

    async def export(self, call: Call[None]) -> Reply[AccountExportBody]:
        exported = await self.service.export(self._caller(call, change=False))
        body = AccountExportBody(
            account=account_details(exported.view),
            sessions=[
                SessionRecordExport(
                    id=r.id,
                    provider=r.provider,
                    created_at=r.created_at,
                    expires_at=r.expires_at,
                    auth_time=r.auth_time,
                    revoked_at=r.revoked_at,
                    user_agent=r.user_agent,
                    address=r.client_address,
                    passkey_id=r.passkey_id,
                )
                for r in exported.sessions
            ],
            events=[
                AuditRecord(
                    at=e.at,
                    provider=e.provider,
                    outcome=e.outcome.value,
                    address=e.client_address,
                    user_agent=e.user_agent,
                )
                for e in exported.events
            ],
            grants=[
                GrantExport(
                    client_id=g.client_id,
                    scopes=sorted(g.scopes),
                    granted_at=g.granted_at,
                    last_used_at=g.last_used_at,
                )
                for g in exported.grants
            ],
            passkeys=[
                PasskeyExport(
                    passkey=passkey_info(p),
                    credential_id=_b64url(p.credential_id),
                    public_key=_b64url(p.public_key),
                    sign_count=p.sign_count,
                )
                for p in exported.passkeys
            ],
        )
        return Reply(body, headers=NO_STORE)

    # -- changing ---------------------------------------------------------------------------

    async def unlink(self, call: Call[None]) -> Reply[LinkedProviders]:
        caller = self._caller(call, change=True)
        remaining = await self.service.unlink(caller, call.path["provider"])
        return Reply(LinkedProviders([linked_provider(i) for i in remaining]), headers=NO_STORE)

    async def end_session(self, call: Call[None]) -> Reply[None]:
        await self.service.end_session(self._caller(call, change=True), call.path["id"])
        return Reply(None, status=204, headers=NO_STORE)

    async def end_other_sessions(self, call: Call[None]) -> Reply[None]:
        remove_passkeys = call.params.first("remove_passkeys") == "true"
        await self.service.end_other_sessions(
            self._caller(call, change=True), remove_passkeys=remove_passkeys
        )
        return Reply(None, status=204, headers=NO_STORE)

    async def delete_account(self, call: Call[None]) -> Reply[None]:
        await self.service.delete(self._caller(call, change=True))
        cleared = (
            Cookie(SESSION_COOKIE, "", max_age=0),
            Cookie(BINDING_COOKIE, "", max_age=0, path=BINDING_PATH, samesite="None"),
        )
        return Reply(None, status=204, headers=NO_STORE, cookies=cleared)
