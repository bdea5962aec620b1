"""What the operations on the caller's account share: read (``account:read`` or
``account:manage``) and change (``account:manage``) security, the same-origin guard of a cookie's
change, the client's address and CORS."""

from __future__ import annotations

from typing import Any

import attrs

from authgate.domain.model import Caller
from authgate.domain.scopes import ACCOUNT_MANAGE, READ_SCOPES
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.operations import Late, Operations
from authgate.entrypoints.http.common.session_auth import (
    SESSION_COOKIE_SCHEME,
    SameOriginGuard,
    auth_time_of,
    session_id_of,
)
from authgate.entrypoints.rest import ApiKey, BearerJWT, Call, Cors, Principal
from authgate.entrypoints.rest.security import SecurityScheme

NO_STORE = {"Cache-Control": "no-store"}

# The security of an account operation, as its declaration names it.
READ = Late(lambda area: area.read)
MANAGE = Late(lambda area: area.manage)
# Spec 4.4 and 2.9: the bearer JWT only (one security requirement).
READ_BY_BEARER = Late(lambda area: area.read[:1])


def principal_of(call: Call[Any]) -> Principal:
    """The authenticated caller (the operation's schemes checked it and its scopes)."""
    assert call.principal is not None
    return call.principal


@attrs.define(slots=False, eq=False)
class AccountArea(Operations):
    """The operations on the caller's account, under the account's tag."""

    tag = docs.ACCOUNT

    bearer: BearerJWT
    cookie: ApiKey
    guard: SameOriginGuard
    client_address: ClientAddress
    cors: Cors | None = None
    read: list[SecurityScheme] = attrs.field(init=False)
    manage: list[SecurityScheme] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.read = [s.with_scopes(*READ_SCOPES) for s in (self.bearer, self.cookie)]
        self.manage = [s.with_scopes(ACCOUNT_MANAGE) for s in (self.bearer, self.cookie)]

    def _caller(self, call: Call[Any], *, change: bool) -> Caller:
        """Who calls, from where; a change with the cookie passes the same-origin guard."""
        principal = principal_of(call)
        if change and principal.scheme == SESSION_COOKIE_SCHEME:
            self.guard.check(call.request)
        provider = principal.claims.get("provider")
        return Caller(
            account_id=principal.subject,
            session_id=session_id_of(principal),
            provider=provider if isinstance(provider, str) else "",
            auth_time=auth_time_of(principal),
            client=self.client_address.client(call.request),
        )
