"""The caller's account: what it holds, its sessions, and unlinking a provider from it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import attrs

from authgate.domain import errors
from authgate.domain.model import Account, LinkedIdentity, SessionRecord
from authgate.ports.accounts import AccountRepository, LastIdentityError
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.sessions import SessionService


@attrs.frozen
class AccountView:
    """An account with the provider identities it holds, oldest link first."""

    account: Account
    identities: list[LinkedIdentity]


class AccountService:
    """Reads and changes the signed-in caller's account; raises the domain's errors."""

    def __init__(
        self,
        *,
        accounts: AccountRepository,
        units: UnitOfWork,
        sessions: SessionService,
        providers: Sequence[str],
    ) -> None:
        self.accounts = accounts
        self.units = units
        self.sessions = sessions
        self.providers = tuple(providers)  # configured order: the order of error messages

    async def linked_providers(self, account_id: str) -> list[LinkedIdentity]:
        """Spec 4.4: the caller's links; an empty list when there are none."""
        return await self.accounts.list_identities(account_id)

    async def account(self, account_id: str) -> AccountView:
        """The caller's account; :class:`~errors.AccountGone` when it was deleted."""
        account = await self.accounts.get(account_id)
        if account is None:
            raise errors.AccountGone()
        return AccountView(account, await self.accounts.list_identities(account_id))

    async def unlink(
        self, account_id: str, provider: str, *, current: str | None = None
    ) -> list[LinkedIdentity]:
        """Remove the caller's identity at ``provider`` and end the sessions issued through
        it (but the caller's ``current`` one), in one transaction; the identities that remain.

        Never the last one (its owner could not sign in again): :class:`~errors.LastIdentity`.
        :class:`~errors.InvalidProvider` for a provider this service does not know and the
        account does not hold; :class:`~errors.IdentityNotLinked` for a known one it does not
        hold."""
        now = self.sessions.clock.now()
        ended: list[str] = []
        try:
            async with self.units.begin() as tx:
                removed = await tx.accounts.unlink_identity(account_id, provider)
                if removed:
                    ended = await tx.sessions.revoke_all(
                        account_id, now, keep=current, provider=provider
                    )
        except LastIdentityError:
            raise errors.LastIdentity(provider) from None
        await self.sessions.announce(ended)
        if not removed:
            if provider not in self.providers:
                raise errors.InvalidProvider(provider, self.providers)
            raise errors.IdentityNotLinked(provider)
        return await self.accounts.list_identities(account_id)

    # -- sessions ---------------------------------------------------------------------------

    async def live_sessions(self, account_id: str) -> list[SessionRecord]:
        return await self.sessions.live_sessions(account_id)

    async def end_session(
        self, account_id: str, session_id: str, *, current: str, auth_time: dt.datetime | None
    ) -> None:
        """End one of the caller's sessions; another than the ``current`` one needs a recent
        sign-in (RFC 9470). :class:`~errors.SessionNotFound` when it has no such live one."""
        if session_id != current:
            self.sessions.require_recent_authentication(auth_time)
        if not await self.sessions.revoke(account_id, session_id):
            raise errors.SessionNotFound()

    async def end_other_sessions(
        self, account_id: str, *, current: str, auth_time: dt.datetime | None
    ) -> list[str]:
        """Sign out everywhere else: every live session but the ``current`` one (RFC 9470)."""
        self.sessions.require_recent_authentication(auth_time)
        return await self.sessions.revoke_all(account_id, keep=current)
