"""The caller's applications (the OpenID Provider's clients it consented to or holds tokens of)
on the account API, registered only when clients are."""

from __future__ import annotations

import attrs

from authgate.domain import errors
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.account_area import MANAGE, NO_STORE, READ, AccountArea
from authgate.entrypoints.http.common.bodies import AppInfo, AppList, app_errors, from_record
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.rest import Call, Reply, path, pattern
from authgate.services.openid.apps import AccountApps

# A registered client_id is printable ASCII (the configuration's rule); at most 255 of them.
CLIENT_ID = r"^[!-~]{1,255}$"
APP_CLIENT_ID = path(
    "client_id",
    pattern(CLIENT_ID),
    description="The client id of one of the caller's applications, as GET /v1/account/apps "
    "lists it.",
)


@attrs.define(slots=False, eq=False)
class AppOperations(AccountArea):
    """The caller's applications on the account API."""

    service: AccountApps = attrs.field(kw_only=True)

    @operation(
        "GET",
        "/v1/account/apps",
        response=AppList,
        security=READ,
        operation_id="list_apps",
        summary="List the applications",
        description="The applications the caller granted access to (as their OpenID Provider), "
        "and those holding tokens of the caller that still work without a grant (granted "
        "false: an application that needs no consent): client id, name, scopes, when granted "
        "and when last used, and how many token families still work.",
        refusals=docs.READ_REFUSALS,
    )
    async def list_apps(self, call: Call[None]) -> Reply[AppList]:
        caller = self._caller(call, change=False)
        apps = await self.service.for_account(caller.account_id)
        listed = [from_record(AppInfo, a, scopes=list(a.scopes)) for a in apps]
        return Reply(AppList(listed), headers=NO_STORE)

    @operation(
        "DELETE",
        "/v1/account/apps/{client_id}",
        params=[APP_CLIENT_ID],
        status=204,
        security=MANAGE,
        responses={
            204: "The consent is withdrawn and the application's tokens are revoked",
            **app_errors(401, 403, 404),
        },
        operation_id="withdraw_app",
        summary="Withdraw an application's access",
        description="Withdraws the caller's consent to an application, spends the codes it has "
        "not redeemed yet and revokes its refresh and access tokens at once; its next sign-in "
        "asks for consent again. Needs a recent sign-in.",
        refusals=(*docs.CHANGE_REFUSALS, errors.AppNotFound("example")),
    )
    async def withdraw(self, call: Call[None]) -> Reply[None]:
        caller = self._caller(call, change=True)
        await self.service.withdraw(caller, call.path["client_id"])
        return Reply(None, status=204, headers=NO_STORE)
