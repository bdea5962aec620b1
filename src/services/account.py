"""The caller's account: what it holds, its sessions, and unlinking a provider from it."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from authgate.domain import errors
from authgate.domain.model import (
    Account,
    Caller,
    LinkedIdentity,
    Outcome,
    SessionRecord,
    SignInEvent,
)
from authgate.ports.accounts import AccountRepository, LastIdentityError
from authgate.ports.events import SignInEventLog
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.audit import audit_event
from authgate.services.provider_tokens import ProviderTokenService, enqueue_token_revocations
from authgate.services.sessions import SessionService


@attrs.frozen
class AccountExport:
    """Everything stored about an account."""

    view: AccountView
    sessions: list[SessionRecord]
    events: list[SignInEvent]


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
        events: SignInEventLog,
        units: UnitOfWork,
        sessions: SessionService,
        providers: Sequence[str],
        provider_tokens: ProviderTokenService | None = None,
    ) -> None:
        self.provider_tokens = provider_tokens or ProviderTokenService(None)
        self.accounts = accounts
        self.events = events
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

    async def unlink(self, caller: Caller, provider: str) -> list[LinkedIdentity]:
        """Remove the caller's identity at ``provider`` and end the sessions issued through it
        (but the caller's own), in one transaction with its audit event; the identities that
        remain. Needs a recent sign-in (RFC 9470).

        Never the last one (its owner could not sign in again): :class:`~errors.LastIdentity`.
        :class:`~errors.InvalidProvider` for a provider this service does not know and the
        account does not hold; :class:`~errors.IdentityNotLinked` for a known one it does not
        hold."""
        self.sessions.require_recent_authentication(caller.auth_time)
        account_id = caller.account_id
        now = self.sessions.clock.now()
        ended: list[str] = []
        try:
            async with self.units.begin() as tx:
                # Before the identity goes (its sealed token goes with it); rolled back with
                # the unlink when that fails.
                queued = await enqueue_token_revocations(tx, account_id, now, provider)
                removed = await tx.accounts.unlink_identity(account_id, provider)
                if removed:
                    ended = await tx.sessions.revoke_all(
                        account_id, now, keep=caller.session_id, provider=provider
                    )
                    await tx.events.record(
                        audit_event(now, provider, Outcome.UNLINKED, caller.client, account_id)
                    )
        except LastIdentityError:
            raise errors.LastIdentity(provider) from None
        await self.sessions.announce(ended)
        if queued:
            self.provider_tokens.queued()
        if not removed:
            if provider not in self.providers:
                raise errors.InvalidProvider(provider, self.providers)
            raise errors.IdentityNotLinked(provider)
        return await self.accounts.list_identities(account_id)

    async def delete(self, caller: Caller) -> None:
        """Delete the caller's account: its identities, every session and the account go in
        one transaction with the audit event (which, like every event, holds no email or
        name). Needs a recent sign-in (RFC 9470). A later sign-in with the same identity is
        a new user."""
        self.sessions.require_recent_authentication(caller.auth_time)
        now = self.sessions.clock.now()
        async with self.units.begin() as tx:
            ended = await tx.sessions.revoke_all(caller.account_id, now)
            queued = await enqueue_token_revocations(tx, caller.account_id, now)
            if not await tx.accounts.delete(caller.account_id):
                raise errors.AccountGone()
            await tx.events.record(
                audit_event(
                    now, caller.provider, Outcome.ACCOUNT_DELETED, caller.client, caller.account_id
                )
            )
        await self.sessions.announce(ended)
        if queued:
            self.provider_tokens.queued()

    async def export(self, caller: Caller) -> AccountExport:
        """Everything stored about the caller (data-protection requests); a recent sign-in."""
        self.sessions.require_recent_authentication(caller.auth_time)
        view = await self.account(caller.account_id)
        return AccountExport(
            view=view,
            sessions=await self.sessions.records.for_account(caller.account_id),
            events=await self.events.for_account(caller.account_id),
        )

    # -- sessions ---------------------------------------------------------------------------

    async def live_sessions(self, account_id: str) -> list[SessionRecord]:
        return await self.sessions.live_sessions(account_id)

    async def end_session(self, caller: Caller, session_id: str) -> None:
        """End one of the caller's sessions; another than the caller's own needs a recent
        sign-in (RFC 9470). :class:`~errors.SessionNotFound` when it has no such live one."""
        if session_id != caller.session_id:
            self.sessions.require_recent_authentication(caller.auth_time)
        ended = await self.sessions.revoke(
            caller.account_id, session_id, client=caller.client, provider=caller.provider
        )
        if not ended:
            raise errors.SessionNotFound()

    async def end_other_sessions(self, caller: Caller) -> list[str]:
        """Sign out everywhere else: every live session but the caller's (RFC 9470)."""
        self.sessions.require_recent_authentication(caller.auth_time)
        return await self.sessions.revoke_all(
            caller.account_id,
            client=caller.client,
            provider=caller.provider,
            keep=caller.session_id,
        )
