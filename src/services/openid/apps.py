"""The person's applications: the clients they consented to (grants) or that hold tokens of
theirs still working (live token families), listed, and consent withdrawn.

Withdrawing removes the grant, spends the unredeemed codes and revokes the token families, in
that order, in one unit of work: a code redeemed at the same moment either finds no grant (or
no code), or its family is committed before the revocation, which then ends it too.

The list shows applications without a grant whose tokens still work too, so that no
application holds working tokens the person cannot see.
"""

from __future__ import annotations

import datetime as dt

import attrs

from authgate.domain import errors
from authgate.domain.model import Caller, Outcome
from authgate.domain.openid.records import Grant, TokenFamily
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.audit import record_audit
from authgate.services.openid.client_directory import ClientDirectory
from authgate.services.sessions import SessionService


@attrs.frozen
class AccountApp:
    """An application of the account: one it granted access to (``granted``), or one holding
    live token families without a grant. ``name`` is None when the client is no longer
    registered (its grant stays until withdrawn). Without a grant, ``scopes`` is empty (no
    consent recorded them) and ``granted_at`` is when its oldest live family was issued.
    ``live_token_families``: how many families of the client still work (their refresh and
    access tokens)."""

    client_id: str
    name: str | None
    scopes: tuple[str, ...]
    granted_at: dt.datetime
    last_used_at: dt.datetime | None
    granted: bool = True
    live_token_families: int = 0


@attrs.define(eq=False, repr=False, slots=False, kw_only=True)
class AccountApps:
    """Lists the caller's applications and withdraws consent to one."""

    _clients: ClientDirectory
    _units: UnitOfWork
    _sessions: SessionService

    async def for_account(self, account_id: str) -> list[AccountApp]:
        """The account's applications with a grant or a live token family, by client id."""
        now = self._sessions.clock.now()
        async with self._units.read() as tx:
            grants = await tx.grants.for_account(account_id)
            families = await tx.refresh_tokens.for_account(account_id)
            live_sessions = {s.id for s in await tx.sessions.live_for_account(account_id, now)}
        # A family works while it is live and so is its authgate session (the token endpoint's
        # and the resource checks' rule).
        live: dict[str, list[TokenFamily]] = {}
        for family in families:
            if family.live(now) and family.session_id in live_sessions:
                live.setdefault(family.client_id, []).append(family)
        by_client: dict[str, Grant] = {g.client_id: g for g in grants}
        apps = []
        for client_id in sorted(by_client.keys() | live.keys()):
            client = await self._clients.find(client_id)
            name = client.name if client is not None else None
            working = live.get(client_id, [])
            grant = by_client.get(client_id)
            apps.append(
                AccountApp(
                    client_id=client_id,
                    name=name,
                    scopes=tuple(sorted(grant.scopes)) if grant else (),
                    granted_at=grant.granted_at if grant else min(f.created_at for f in working),
                    last_used_at=grant.last_used_at if grant else None,
                    granted=grant is not None,
                    live_token_families=len(working),
                )
            )
        return apps

    async def withdraw(self, caller: Caller, client_id: str) -> list[str]:
        """Withdraw the caller's consent to ``client_id``, spend the account's outstanding
        codes of it and revoke its token families, audited, in one unit of work; the families
        revoked. Needs a recent sign-in; :class:`~errors.AppNotFound` when there is nothing of that
        client to withdraw (an application that needs no consent has families only)."""
        self._sessions.require_recent_authentication(caller.auth_time)
        account_id = caller.account_id
        now = self._sessions.clock.now()
        async with self._units.begin() as tx:
            # In this order (see the module's text): the grant, the codes, then the families.
            removed = await tx.grants.remove(account_id, client_id)
            discarded = await tx.authorization_codes.discard_outstanding(account_id, client_id)
            revoked = await tx.refresh_tokens.revoke_for_client(account_id, client_id, now)
            if not removed and not revoked and not discarded:
                raise errors.AppNotFound(client_id)
            detail = f"client {client_id}: {len(revoked)} token families revoked"
            if discarded:
                detail += f", {discarded} unused codes spent"
            outcome = Outcome.APP_WITHDRAWN
            await record_audit(tx, now, caller.provider, outcome, caller.client, account_id, detail)
        return revoked
