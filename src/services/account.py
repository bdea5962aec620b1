"""The caller's account: what it holds, its sessions, and unlinking a provider from it."""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Sequence

import attrs

from authgate.domain import errors
from authgate.domain.model import (
    Account,
    Caller,
    ClientInfo,
    EventId,
    LinkedIdentity,
    Outcome,
    ProviderIdentity,
    SessionRecord,
    SignInEvent,
)
from authgate.domain.openid.records import Grant
from authgate.domain.passkeys import Passkey
from authgate.ports.accounts import AccountRepository, LastIdentityError
from authgate.ports.events import SignInEventLog
from authgate.ports.unit_of_work import Transaction, UnitOfWork
from authgate.services.audit import record_audit
from authgate.services.passkeys import remove_passkey_in
from authgate.services.provider_tokens import (
    ProviderTokenService,
    enqueue_token_revocations,
    or_no_provider_tokens,
)
from authgate.services.sessions import SessionService


class ProviderRemoval(enum.Enum):
    """What a provider's withdrawal of its user did."""

    UNLINKED = "unlinked"
    ACCOUNT_DELETED = "account_deleted"
    KEPT = "kept"  # the only sign-in method: kept, its sessions ended (setting)
    UNKNOWN_SUBJECT = "unknown_subject"
    REPLAYED = "replayed"


@attrs.frozen
class AccountExport:
    """Everything stored about an account; ``grants``: its consents to applications."""

    view: AccountView
    sessions: list[SessionRecord]
    events: list[SignInEvent]
    grants: list[Grant] = attrs.field(factory=list)
    passkeys: list[Passkey] = attrs.field(factory=list)


@attrs.frozen
class AccountView:
    """An account with the provider identities it holds, oldest link first."""

    account: Account
    identities: list[LinkedIdentity]


def _in_order(providers: Sequence[str]) -> tuple[str, ...]:
    """The configured providers; their order is the order of error messages."""
    return tuple(providers)


@attrs.frozen
class _Change:
    """A change to an account inside a unit of work; ``provider`` is the one its audit names."""

    tx: Transaction
    account_id: str
    provider: str
    now: dt.datetime
    client: ClientInfo | None

    async def audit(self, outcome: Outcome, detail: str | None = None) -> None:
        await record_audit(
            self.tx, self.now, self.provider, outcome, self.client, self.account_id, detail
        )


@attrs.define(eq=False, repr=False, slots=False, kw_only=True)
class AccountService:
    """Reads and changes the signed-in caller's account; raises the domain's errors."""

    accounts: AccountRepository
    events: SignInEventLog
    units: UnitOfWork
    sessions: SessionService
    providers: tuple[str, ...] = attrs.field(converter=_in_order)
    provider_tokens: ProviderTokenService = attrs.field(
        default=None, converter=or_no_provider_tokens
    )

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
        remain. Needs a recent sign-in (RFC 9470). Never the last one (its owner could not sign
        in again): :class:`~errors.LastIdentity`; :class:`~errors.InvalidProvider` for a
        provider neither configured nor held, :class:`~errors.IdentityNotLinked` for a
        configured one not held."""
        self.sessions.require_recent_authentication(caller.auth_time)
        account_id = caller.account_id
        now = self.sessions.clock.now()
        try:
            async with self.units.begin() as tx:
                change = _Change(tx, account_id, provider, now, caller.client)
                ended = await self._unlink_in(change, keep=caller.session_id)
        except LastIdentityError:
            raise errors.LastIdentity(provider) from None
        if ended is None:
            if provider not in self.providers:
                raise errors.InvalidProvider(provider, self.providers)
            raise errors.IdentityNotLinked(provider)
        await self.sessions.announce(ended)
        self.provider_tokens.queued()
        return await self.accounts.list_identities(account_id)

    async def delete(self, caller: Caller) -> None:
        """Delete the caller's account: its identities, every session and the account go in
        one transaction with the audit event (which, like every event, holds no email or
        name). Needs a recent sign-in (:meth:`SessionService.require_recent_sign_in`). A later
        sign-in with the same identity is a new user."""
        now = self.sessions.clock.now()
        async with self.units.begin() as tx:
            await self.sessions.require_recent_sign_in(tx, caller)
            change = _Change(tx, caller.account_id, caller.provider, now, caller.client)
            ended = await self._delete_in(change)
            if ended is None:
                raise errors.AccountGone()
        await self.sessions.announce(ended)
        self.provider_tokens.queued()

    async def remove_identity_for_provider(
        self,
        identity: ProviderIdentity,
        event: EventId,
        *,
        kind: str,
        delete_when_last: bool,
        client: ClientInfo | None = None,
    ) -> ProviderRemoval:
        """The provider says its user withdrew (Apple ``consent-revoked``, ``account-delete``):
        unlink ``identity`` and end the sessions issued through it; when it is the account's
        only sign-in method, delete the account (``delete_when_last``) or keep it and end every
        session. One transaction with the event's one-time ``jti`` and the audit event: a
        replayed event changes nothing."""
        now = self.sessions.clock.now()
        async with self.units.begin() as tx:
            if not await tx.seen_events.first_sight(event, now):
                return ProviderRemoval.REPLAYED
            holder = await tx.accounts.find_by_identity(identity)
            if holder is None:
                unknown = f"{kind}: unknown subject"
                outcome = Outcome.PROVIDER_EVENT
                await record_audit(tx, now, identity.provider, outcome, client, None, unknown)
                return ProviderRemoval.UNKNOWN_SUBJECT
            change = _Change(tx, holder.id, identity.provider, now, client)
            removal, ended = await self._withdraw_in(change, kind, delete_when_last)
        await self.sessions.announce(ended)
        if removal is not ProviderRemoval.KEPT:
            self.provider_tokens.queued()
        return removal

    async def _withdraw_in(
        self, change: _Change, kind: str, delete_when_last: bool
    ) -> tuple[ProviderRemoval, list[str]]:
        """The provider's withdrawal carried out; what it did and the sessions ended."""
        tx, account_id = change.tx, change.account_id
        others = [
            i
            for i in await tx.accounts.list_identities(account_id)
            if i.identity.provider != change.provider
        ]
        # A passkey is a sign-in method too: with one left, the identity goes alone.
        if others or await tx.passkeys.for_account(account_id):
            unlinked = await self._unlink_in(change, outcome=Outcome.PROVIDER_UNLINKED, detail=kind)
            return ProviderRemoval.UNLINKED, unlinked or []
        if delete_when_last:
            return ProviderRemoval.ACCOUNT_DELETED, await self._delete_in(change, kind) or []
        # Kept as it is, signed out: a later sign-in through the provider is the user
        # consenting again (a deleted Apple Account cannot sign in at all).
        ended = await self.sessions.revoke_all_in(tx, account_id, change.now)
        await change.audit(Outcome.PROVIDER_SIGNED_OUT, f"{kind}: only sign-in method, kept")
        return ProviderRemoval.KEPT, ended

    async def _unlink_in(
        self,
        change: _Change,
        *,
        keep: str | None = None,
        outcome: Outcome = Outcome.UNLINKED,
        detail: str | None = None,
    ) -> list[str] | None:
        """The one place of an unlink, whoever asked: the provider's token goes to the revocation
        outbox first (rolled back with the unlink when that fails), then the identity and the
        sessions issued through it (but ``keep``) go, audited; the sessions ended, None when the
        account holds no identity there. Raises LastIdentityError for the last one."""
        tx, account_id, provider, now = change.tx, change.account_id, change.provider, change.now
        await enqueue_token_revocations(tx, account_id, now, provider)
        if not await tx.accounts.unlink_identity(account_id, provider):
            return None
        ended = await self.sessions.revoke_all_in(tx, account_id, now, keep=keep, provider=provider)
        await change.audit(outcome, detail)
        return ended

    async def _delete_in(self, change: _Change, detail: str | None = None) -> list[str] | None:
        """The one place of a deletion, whoever asked: every session ended, every kept provider
        token queued for revocation, the account deleted with its identities, audited; the
        sessions ended, None when there is no such account (the caller rolls back)."""
        ended = await self.sessions.revoke_all_in(change.tx, change.account_id, change.now)
        await enqueue_token_revocations(change.tx, change.account_id, change.now)
        if not await change.tx.accounts.delete(change.account_id):
            return None
        await change.audit(Outcome.ACCOUNT_DELETED, detail)
        return ended

    async def export(self, caller: Caller) -> AccountExport:
        """Everything stored about the caller (data-protection requests); a recent sign-in
        (:meth:`SessionService.require_recent_sign_in`)."""
        view = await self.account(caller.account_id)
        async with self.units.begin() as tx:
            await self.sessions.require_recent_sign_in(tx, caller)
            grants = await tx.grants.for_account(caller.account_id)
            passkeys = await tx.passkeys.for_account(caller.account_id)
        return AccountExport(
            view=view,
            sessions=await self.sessions.records.for_account(caller.account_id),
            events=await self.events.for_account(caller.account_id),
            grants=grants,
            passkeys=passkeys,
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

    async def end_other_sessions(
        self, caller: Caller, *, remove_passkeys: bool = False
    ) -> list[str]:
        """Sign out everywhere else: every live session but the caller's (RFC 9470); the
        sessions ended.

        ``remove_passkeys``: the passkeys those sessions added go too, in the same unit of
        work (whoever held one of them could have added a passkey of their own, which would
        outlive the sign-out) — but not the passkey the caller's own session signed in with,
        which the caller holds. :class:`~errors.LastSignInMethod`, nothing changed, when that
        would leave the account no way to sign in (docs/passkeys.md)."""
        self.sessions.require_recent_authentication(caller.auth_time)
        if not remove_passkeys:
            return await self.sessions.revoke_all(
                caller.account_id,
                client=caller.client,
                provider=caller.provider,
                keep=caller.session_id,
            )
        now = self.sessions.clock.now()
        try:
            async with self.units.begin() as tx:
                ended = await self.sessions.revoke_all_in(
                    tx, caller.account_id, now, keep=caller.session_id
                )
                own = await tx.sessions.get(caller.session_id)
                held = own.passkey_id if own is not None else None
                added = [
                    p.id
                    for p in await tx.passkeys.for_account(caller.account_id)
                    if p.added_by_session in ended and p.id != held
                ]
                for passkey_id in added:
                    await remove_passkey_in(
                        self.sessions,
                        tx,
                        caller,
                        passkey_id,
                        now,
                        keep=caller.session_id,
                        detail="added by a session signed out everywhere else",
                    )
                detail = f"{len(ended)} sessions, {len(added)} passkeys removed"
                outcome = Outcome.SIGNED_OUT_EVERYWHERE
                await record_audit(
                    tx, now, caller.provider, outcome, caller.client, caller.account_id, detail
                )
        except LastIdentityError:
            raise errors.LastSignInMethod() from None
        await self.sessions.announce(ended)
        return ended
