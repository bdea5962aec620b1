"""The person's applications: the clients they consented to (grants), listed, and consent
withdrawn.

Withdrawing removes the grant and revokes the account's token families of that client in one
unit of work with its audit event: the application's refresh tokens stop working, and its
access tokens are inactive at once on every instance (their family is a row every instance
reads, :mod:`authgate.services.openid_access`). Like unlinking a provider, it needs a recent
sign-in (RFC 9470). The application's next authorization asks for consent again.
"""

from __future__ import annotations

import datetime as dt

import attrs

from authgate.domain import errors
from authgate.domain.clients import ClientRegistry
from authgate.domain.model import Caller, Outcome
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.audit import audit_event
from authgate.services.sessions import SessionService


@attrs.frozen
class AccountApp:
    """An application the account granted access to. ``name`` is None when the client is no
    longer registered (its grant stays until withdrawn)."""

    client_id: str
    name: str | None
    scopes: tuple[str, ...]
    granted_at: dt.datetime
    last_used_at: dt.datetime | None


class AccountApps:
    """Lists the caller's applications and withdraws consent to one."""

    def __init__(
        self, *, clients: ClientRegistry, units: UnitOfWork, sessions: SessionService
    ) -> None:
        self._clients = clients
        self._units = units
        self._sessions = sessions

    async def for_account(self, account_id: str) -> list[AccountApp]:
        """The account's applications with a grant, by client id."""
        async with self._units.begin() as tx:
            grants = await tx.grants.for_account(account_id)
        apps = []
        for grant in grants:
            client = self._clients.get(grant.client_id)
            apps.append(
                AccountApp(
                    client_id=grant.client_id,
                    name=client.name if client is not None else None,
                    scopes=tuple(sorted(grant.scopes)),
                    granted_at=grant.granted_at,
                    last_used_at=grant.last_used_at,
                )
            )
        return apps

    async def withdraw(self, caller: Caller, client_id: str) -> list[str]:
        """Withdraw the caller's consent to ``client_id`` and revoke the account's token
        families of it, audited, in one unit of work; the families revoked. Needs a recent
        sign-in (:class:`~errors.ReauthenticationRequired`); :class:`~errors.AppNotFound`
        when the account has neither a grant nor a live family of that client (an
        application that needs no consent has families only)."""
        self._sessions.require_recent_authentication(caller.auth_time)
        account_id = caller.account_id
        now = self._sessions.clock.now()
        async with self._units.begin() as tx:
            removed = await tx.grants.remove(account_id, client_id)
            revoked = await tx.refresh_tokens.revoke_for_client(account_id, client_id, now)
            if not removed and not revoked:
                raise errors.AppNotFound(client_id)
            detail = f"client {client_id}: {len(revoked)} token families revoked"
            await tx.events.record(
                audit_event(
                    now, caller.provider, Outcome.APP_WITHDRAWN, caller.client, account_id, detail
                )
            )
        return revoked
