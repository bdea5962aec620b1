"""Provider events: acting on what the identity providers say about their users.

One path for every receiver: the provider's token is verified
(:class:`~authgate.ports.provider_events.EventTokenVerifier`), its events parsed by the shape's
function (:mod:`authgate.domain.provider_events`), then carried out in one transaction with the
event's one-time ``jti`` and the audit events: a replayed event changes nothing and a failed
one is delivered again. Revoked sessions are announced to every instance after the commit.
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
from collections.abc import Collection, Mapping

import attrs

from authgate.domain.model import ClientInfo, Outcome, ProviderIdentity
from authgate.domain.provider_events import (
    Action,
    Decision,
    Ending,
    KeptToken,
    MalformedEvent,
    ProviderEvent,
    apple_event,
    decide,
    logout_event,
    risc_events,
)
from authgate.ports.clock import Clock
from authgate.ports.events import SignInEventLog
from authgate.ports.provider_events import (
    INVALID_REQUEST,
    EventTokenRejected,
    EventTokenVerifier,
    VerifiedEventToken,
)
from authgate.ports.unit_of_work import Transaction, UnitOfWork
from authgate.services.account import AccountService, ProviderRemoval
from authgate.services.audit import audit_event, record_audit, record_refusal, security_log
from authgate.services.provider_tokens import enqueue_token_revocations
from authgate.services.sessions import SessionService

log = logging.getLogger("authgate.provider_events")


class Shape(enum.Enum):
    """The kinds of receiver; a provider's configuration decides which it has."""

    BACKCHANNEL_LOGOUT = "backchannel_logout"  # OpenID Connect Back-Channel Logout 1.0
    APPLE = "apple"  # Sign in with Apple server-to-server notifications
    RISC = "risc"  # Security Event Tokens (RFC 8417), Google Cross-Account Protection


@attrs.frozen
class Receiver:
    """One provider's receiver of one shape: its verifier, and the issuers its subjects
    name (RISC's ``iss_sub``)."""

    provider: str
    shape: Shape
    verifier: EventTokenVerifier
    issuers: tuple[str, ...] = ()


@attrs.frozen
class ProviderEventPolicy:
    """``provider_events.*``: when a provider withdraws the account's only sign-in method,
    delete the account (True) or keep it and end its sessions (False)."""

    delete_account_when_last_identity: bool = True


class Received(enum.Enum):
    """What the service made of a delivered event (the token verified)."""

    APPLIED = "applied"
    REPLAYED = "replayed"  # the jti was seen already: nothing done again


def _by_provider_and_shape(
    receivers: Collection[Receiver],
) -> Mapping[tuple[str, Shape], Receiver]:
    return {(r.provider, r.shape): r for r in receivers}


@attrs.define(eq=False, repr=False, slots=False, kw_only=True)
class ProviderEventService:
    """Receives the providers' event tokens; raises EventTokenRejected for a bad one (and
    EventTokenUnavailable when the provider's keys cannot be loaded)."""

    receivers: Mapping[tuple[str, Shape], Receiver] = attrs.field(converter=_by_provider_and_shape)
    units: UnitOfWork
    events: SignInEventLog
    sessions: SessionService
    account: AccountService
    clock: Clock
    policy: ProviderEventPolicy

    async def receive(
        self, provider: str, shape: Shape, token: str, client: ClientInfo
    ) -> Received:
        """Verify ``token`` and carry out its events (the token is never logged)."""
        receiver = self.receivers[(provider, shape)]
        try:
            verified = await receiver.verifier.verify(token)
            events = _parse(receiver, verified)
        except EventTokenRejected as e:
            await self.refused(provider, shape, e, client)
            raise
        kinds = ",".join(e.kind for e in events)
        removal = next((e for e in events if e.action is Action.REMOVE_IDENTITY), None)
        if removal is not None and removal.subject is not None:  # Apple: one event a token
            done = await self.account.remove_identity_for_provider(
                ProviderIdentity(provider, removal.subject),
                verified.event_id,
                kind=removal.kind,
                delete_when_last=self.policy.delete_account_when_last_identity,
                client=client,
            )
            log.info("provider event: %s %s: %s", provider, kinds, done.value)
            return Received.REPLAYED if done is ProviderRemoval.REPLAYED else Received.APPLIED
        now = self.clock.now()
        ended: list[str] = []
        queued = 0
        async with self.units.begin() as tx:
            if not await tx.seen_events.first_sight(verified.event_id, now):
                log.info("provider event: %s %s: replayed jti, nothing done", provider, kinds)
                return Received.REPLAYED
            for event in events:
                event_ended, event_queued = await self._apply(tx, provider, event, client, now)
                ended += event_ended
                queued += event_queued
        await self.sessions.announce(ended)
        if queued:
            self.account.provider_tokens.queued()
        log.info("provider event: %s %s: %d sessions ended", provider, kinds, len(ended))
        return Received.APPLIED

    async def refused(
        self, provider: str, shape: Shape, e: EventTokenRejected, client: ClientInfo
    ) -> None:
        """Log and audit a delivery refused (a bad token, or a body not of the shape)."""
        security_log.warning(
            "security event: %s %s delivery refused: %s: %s",
            provider,
            shape.value,
            e.code,
            e.description,
        )
        detail = f"{shape.value}: {e.code}"
        now = self.clock.now()
        event = audit_event(now, provider, Outcome.PROVIDER_EVENT_REJECTED, client, None, detail)
        await record_refusal(self.events, event, log, "a provider event's audit event")

    async def _apply(
        self,
        tx: Transaction,
        provider: str,
        event: ProviderEvent,
        client: ClientInfo,
        now: dt.datetime,
    ) -> tuple[list[str], int]:
        """Carry out what ``event`` means (:func:`decide`) inside ``tx``; the sessions it
        ended and the revocations of provider tokens it queued."""
        decision = decide(event)
        identity = ProviderIdentity(provider, event.subject) if event.subject else None
        holder = await tx.accounts.find_by_identity(identity) if identity else None
        if decision.unrecognised:
            log.info("provider event: %s sent an event type we do not act on", provider)
        if decision.needs_account and holder is None:
            a = decision.unknown_subject()
            await record_audit(tx, now, provider, a.outcome, client, a.account_id, a.detail)
            return [], 0
        account_id = holder.id if holder else None
        if identity is not None and holder is not None:
            await _change_identity(tx, identity, decision)
        ended = await _end_sessions(
            tx, self.sessions, provider, decision.ending, event.provider_session, account_id, now
        )
        dropped, queued = await _kept_token(tx, decision.kept_token, account_id, provider, now)
        if decision.review:
            security_log.warning(
                "security event: %s %s for account %s: to review",
                provider,
                decision.detail,
                account_id or "(unknown subject)",
            )
        counts = {a: len(sids) for a, sids in ended.items()}
        for a in decision.audits(account_id, counts, dropped):
            await record_audit(tx, now, provider, a.outcome, client, a.account_id, a.detail)
        return [sid for sids in ended.values() for sid in sids], queued


async def _change_identity(tx: Transaction, identity: ProviderIdentity, decision: Decision) -> None:
    """Disable or enable the identity's sign-ins, turn its relay email off or on."""
    if decision.disable_identity is not None or decision.enable_identity:
        await tx.accounts.set_identity_disabled(identity, decision.disable_identity)
    if decision.email_disabled is not None:
        await tx.accounts.set_identity_email_disabled(identity, decision.email_disabled)


async def _kept_token(
    tx: Transaction, kept: KeptToken, account_id: str | None, provider: str, now: dt.datetime
) -> tuple[bool, int]:
    """Drop the provider's kept token, or queue its revocation: whether one was dropped, and
    how many revocations were queued."""
    if account_id is None or kept is KeptToken.KEEP:
        return False, 0
    if kept is KeptToken.DROP:
        return bool(await tx.provider_tokens.take(account_id, provider)), 0
    return False, await enqueue_token_revocations(tx, account_id, now, provider)


async def _end_sessions(
    tx: Transaction,
    sessions: SessionService,
    provider: str,
    ending: Ending,
    provider_session: str | None,
    account_id: str | None,
    now: dt.datetime,
) -> dict[str, list[str]]:
    """End the sessions ``ending`` names; the sessions ended by account (the holder's
    included, even when none was)."""
    if ending is Ending.PROVIDER_SESSION and provider_session is not None:
        return await sessions.revoke_provider_session_in(
            tx, provider, provider_session, now, account_id=account_id
        )
    if ending is Ending.NONE or account_id is None:
        return {}
    only = None if ending is Ending.EVERY_PROVIDER else provider
    return {account_id: await sessions.revoke_all_in(tx, account_id, now, provider=only)}


def _parse(receiver: Receiver, verified: VerifiedEventToken) -> list[ProviderEvent]:
    """The token's events by the receiver's shape; a malformed one is ``invalid_request``."""
    claims = verified.claims
    try:
        if receiver.shape is Shape.BACKCHANNEL_LOGOUT:
            return [logout_event(claims)]
        if receiver.shape is Shape.APPLE:
            return [apple_event(claims)]
        return risc_events(claims, receiver.issuers)
    except MalformedEvent as e:
        raise EventTokenRejected(INVALID_REQUEST, str(e)) from None
