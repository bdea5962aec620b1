"""The caller's account: every ``/v1/account*`` operation but its applications' and passkeys'."""

from __future__ import annotations

import base64

import attrs

from authgate.domain import errors
from authgate.domain.model import UNPROVEN_AUTH_TIME, LinkedIdentity
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.account_area import (
    MANAGE,
    NO_STORE,
    READ,
    READ_BY_BEARER,
    AccountArea,
    principal_of,
)
from authgate.entrypoints.http.common.binding import cleared_cookies
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
    app_errors,
    from_record,
)
from authgate.entrypoints.http.common.operations import Late, flag, operation
from authgate.entrypoints.http.common.session_auth import session_id_of
from authgate.entrypoints.rest import Call, Param, Reply, path, pattern
from authgate.services.account import AccountExport, AccountService, AccountView


def linked_provider(linked: LinkedIdentity) -> LinkedProvider:
    """Spec 2.2's record of one linked identity (never a provider token). Built field by
    field, not by :func:`from_record`: it runs per identity on every account read, where the
    generic helper's look-up of the body's fields cost about 1 % of the read's instructions
    (docs/benchmarks.md)."""
    identity = linked.identity
    return LinkedProvider(
        provider=identity.provider,
        provider_id=identity.provider_id,
        linked_at=linked.linked_at,
        is_primary=linked.is_primary,
    )


def account_details(view: AccountView) -> AccountDetails:
    """The account as its owner reads it."""
    account = view.account
    return from_record(
        AccountDetails,
        account,
        last_sign_in_at=account.last_login_at,
        providers=[linked_provider(i) for i in view.identities],
    )


@attrs.define(slots=False, eq=False)
class AccountOperations(AccountArea):
    """Registers the account operations on an API."""

    service: AccountService = attrs.field(kw_only=True)

    @property
    def configured(self) -> list[str]:
        """The configuration's providers."""
        return list(self.service.providers)

    def linked_provider_param(self) -> Param:
        """``{provider}``: one the configuration names."""
        return path(
            "provider",
            pattern(r"^[a-z][a-z0-9_-]{0,63}$"),
            description="A linked provider of the caller: one of the configured "
            + ", ".join(self.configured)
            + ".",
            examples=self.configured,
        )

    def unlink_refusals(self) -> tuple[Exception, ...]:
        """What unlinking the example provider can answer."""
        example = self.configured[0] if self.configured else "google"
        return (
            docs.unknown_provider(self.configured),
            *docs.CHANGE_REFUSALS,
            errors.IdentityNotLinked(example),
            errors.AccountGone(),
            errors.LastIdentity(example),
        )

    # Browser pages, whose session cookie is HttpOnly, read the same list from GET /v1/account.
    @operation(
        "GET",
        "/v1/account/providers",
        response=LinkedProviders,
        security=READ_BY_BEARER,
        operation_id="list_linked_providers",
        summary="List linked providers",
        description="The identity providers linked to the caller's account (bearer token only; "
        "scope account:read or account:manage).",
        refusals=(docs.NO_CREDENTIAL, docs.BAD_TOKEN, docs.READ_SCOPE),
    )
    async def linked_providers(self, call: Call[None]) -> LinkedProviders:
        linked = await self.service.linked_providers(principal_of(call).subject)
        return LinkedProviders([linked_provider(i) for i in linked])

    @operation(
        "GET",
        "/v1/account",
        response=AccountDetails,
        security=READ,
        responses={404: AppError},
        operation_id="get_account",
        summary="Get the account",
        description="The caller's account: id, email and whether it is verified, name, when it "
        "was created and last signed in, and its linked providers.",
        refusals=(*docs.READ_REFUSALS, errors.AccountGone()),
    )
    async def account(self, call: Call[None]) -> Reply[AccountDetails]:
        view = await self.service.account(principal_of(call).subject)
        return Reply(account_details(view), headers=NO_STORE)

    @operation(
        "DELETE",
        "/v1/account/providers/{provider}",
        params=Late(lambda self: [self.linked_provider_param()]),
        response=LinkedProviders,
        security=MANAGE,
        responses=app_errors(401, 403, 404, 409),
        operation_id="unlink_provider",
        summary="Unlink a provider",
        description="Unlinks a provider from the caller's account and answers the providers "
        "that remain; the sessions signed in through it end (but the caller's own). The last "
        "provider cannot be unlinked. Needs a recent sign-in.",
        refusals=Late(lambda self: self.unlink_refusals()),
    )
    async def unlink(self, call: Call[None]) -> Reply[LinkedProviders]:
        caller = self._caller(call, change=True)
        remaining = await self.service.unlink(caller, call.path["provider"])
        return Reply(LinkedProviders([linked_provider(i) for i in remaining]), headers=NO_STORE)

    @operation(
        "GET",
        "/v1/account/sessions",
        response=SessionList,
        security=READ,
        operation_id="list_sessions",
        summary="List sessions",
        description="The caller's live sessions; current marks the caller's own.",
        refusals=docs.READ_REFUSALS,
    )
    async def list_sessions(self, call: Call[None]) -> Reply[SessionList]:
        principal = principal_of(call)
        current = session_id_of(principal)
        live = await self.service.live_sessions(principal.subject)
        listed = [
            from_record(
                SessionInfo,
                r,
                current=r.id == current,
                address=r.client_address,
                auth_time_proven=r.auth_time > UNPROVEN_AUTH_TIME,
            )
            for r in live
        ]
        return Reply(SessionList(listed), headers=NO_STORE)

    @operation(
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
        security=MANAGE,
        responses={204: "The session is ended", **app_errors(401, 403, 404)},
        operation_id="end_session",
        summary="End a session",
        description="Ends one of the caller's sessions (sign a device out). Ending another "
        "session needs a recent sign-in.",
        refusals=(*docs.CHANGE_REFUSALS, errors.SessionNotFound()),
    )
    async def end_session(self, call: Call[None]) -> Reply[None]:
        await self.service.end_session(self._caller(call, change=True), call.path["id"])
        return Reply(None, status=204, headers=NO_STORE)

    @operation(
        "DELETE",
        "/v1/account/sessions",
        params=[
            flag(
                "remove_passkeys",
                "true: also remove the passkeys the ended sessions added (but the one the "
                "caller's session signed in with); false or absent: passkeys stay.",
            )
        ],
        status=204,
        security=MANAGE,
        responses={204: "Every session but the caller's is ended", **app_errors(401, 403, 409)},
        operation_id="end_other_sessions",
        summary="End every other session",
        description="Ends every session of the account but the caller's (sign out everywhere "
        "else); with remove_passkeys=true, the passkeys those sessions added go too, in the "
        "same transaction, unless that would leave the account no way to sign in (409, "
        "nothing changed). Needs a recent sign-in.",
        refusals=(*docs.CHANGE_REFUSALS, errors.LastSignInMethod()),
    )
    async def end_other_sessions(self, call: Call[None]) -> Reply[None]:
        remove_passkeys = call.params.first("remove_passkeys") == "true"
        await self.service.end_other_sessions(
            self._caller(call, change=True), remove_passkeys=remove_passkeys
        )
        return Reply(None, status=204, headers=NO_STORE)

    @operation(
        "DELETE",
        "/v1/account",
        status=204,
        security=MANAGE,
        responses={
            204: "The account, its identities and sessions are deleted; cookies cleared",
            **app_errors(401, 403, 404),
        },
        operation_id="delete_account",
        summary="Delete the account",
        description="Deletes the account with its identities and sessions and clears the "
        "cookies. Needs a recent sign-in.",
        refusals=(*docs.CHANGE_REFUSALS, errors.AccountGone()),
    )
    async def delete_account(self, call: Call[None]) -> Reply[None]:
        await self.service.delete(self._caller(call, change=True))
        return Reply(None, status=204, headers=NO_STORE, cookies=cleared_cookies())

    @operation(
        "GET",
        "/v1/account/export",
        response=AccountExportBody,
        security=READ,
        responses=app_errors(401, 404),
        operation_id="export_account",
        summary="Export the account",
        description="Everything stored about the caller (account, identities, sessions, audit "
        "records, consents to applications, passkeys) as one document. Needs a recent sign-in.",
        refusals=(docs.NO_CREDENTIAL, docs.STEP_UP, docs.READ_SCOPE, errors.AccountGone()),
    )
    async def export(self, call: Call[None]) -> Reply[AccountExportBody]:
        exported = await self.service.export(self._caller(call, change=False))
        return Reply(export_body(exported), headers=NO_STORE)


def export_body(exported: AccountExport) -> AccountExportBody:
    """Everything stored about the caller, as the export answers it."""
    return AccountExportBody(
        account=account_details(exported.view),
        sessions=[
            from_record(SessionRecordExport, r, address=r.client_address) for r in exported.sessions
        ],
        events=[
            from_record(AuditRecord, e, outcome=e.outcome.value, address=e.client_address)
            for e in exported.events
        ],
        grants=[from_record(GrantExport, g, scopes=sorted(g.scopes)) for g in exported.grants],
        passkeys=[
            PasskeyExport(
                passkey=PasskeyInfo.of(p),
                credential_id=_b64url(p.credential_id),
                public_key=_b64url(p.public_key),
                sign_count=p.sign_count,
            )
            for p in exported.passkeys
        ],
    )


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
