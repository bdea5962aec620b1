"""Provider events: acting on what the identity providers say about their users.

One path for every receiver: the provider's token is verified (signature against its key
set, ``iss``, ``aud``, ``iat``, ``jti``: the adapter behind
:class:`~authgate.ports.provider_events.EventTokenVerifier`), its events are parsed by the
shape's function (:mod:`authgate.domain.provider_events`), then carried out in one transaction
together with the event's one-time ``jti`` and the audit events, so that a replayed event
changes nothing and a failed one is delivered again. Revoked sessions are announced to every
instance after the commit.
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
from collections.abc import Collection, Mapping

import attrs

from authgate.domain.model import ClientInfo, Outcome, ProviderIdentity, SignInEvent
from authgate.domain.provider_events import (
    Action,
    MalformedEvent,
    ProviderEvent,
    apple_event,
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
from authgate.services.audit import audit_event
from authgate.services.provider_tokens import enqueue_token_revocations
from authgate.services.sessions import SessionService

log = logging.getLogger("authgate.provider_events")
security_log = logging.getLogger("authgate.security")


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


@attrs.frozen
class Applied:
    """What carrying out one event did inside its transaction."""

    ended: list[str] = attrs.field(factory=list)  # the sessions ended
    queued: int = 0  # provider-token revocations queued


class ProviderEventService:
    """Receives the providers' event tokens; raises EventTokenRejected for a bad one (and
    EventTokenUnavailable when the provider's keys cannot be loaded)."""

    def __init__(
        self,
        *,
        receivers: Collection[Receiver],
        units: UnitOfWork,
        events: SignInEventLog,
        sessions: SessionService,
        account: AccountService,
        clock: Clock,
        policy: ProviderEventPolicy,
    ) -> None:
        self.receivers: Mapping[tuple[str, Shape], Receiver] = {
            (r.provider, r.shape): r for r in receivers
        }
        self.units = units
        self.events = events
        self.sessions = sessions
        self.account = account
        self.clock = clock
        self.policy = policy

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
                applied = await self._apply(tx, provider, event, client, now)
                ended += applied.ended
                queued += applied.queued
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
        await self._record(
            audit_event(now, provider, Outcome.PROVIDER_EVENT_REJECTED, client, None, detail)
        )

    async def _apply(
        self,
        tx: Transaction,
        provider: str,
        event: ProviderEvent,
        client: ClientInfo,
        now: dt.datetime,
    ) -> Applied:
        """Carry out one event inside ``tx``; the sessions it ended and the revocations of
        provider tokens it queued."""

        async def audit(outcome: Outcome, account_id: str | None, detail: str) -> None:
            await tx.events.record(audit_event(now, provider, outcome, client, account_id, detail))

        identity = ProviderIdentity(provider, event.subject) if event.subject else None
        holder = await tx.accounts.find_by_identity(identity) if identity else None
        if event.action is Action.END_SESSIONS and event.provider_session is not None:
            if identity is not None and holder is None:
                await audit(Outcome.PROVIDER_EVENT, None, f"{event.kind}: unknown subject")
                return Applied()
            pairs = await tx.sessions.revoke_provider_session(
                provider, event.provider_session, now, account_id=holder.id if holder else None
            )
            for account_id in sorted({a for a, _ in pairs}):
                count = sum(1 for a, _ in pairs if a == account_id)
                await audit(Outcome.PROVIDER_SIGNED_OUT, account_id, f"{event.kind}: {count}")
            if not pairs:
                await audit(Outcome.PROVIDER_EVENT, None, f"{event.kind}: no live session")
            return Applied([sid for _, sid in pairs])
        if event.action in (Action.NOTHING, Action.REVIEW):
            if event.kind == "unknown":
                log.info("provider event: %s sent an event type we do not act on", provider)
            what = f"{event.kind}: {event.reason}" if event.reason else event.kind
            reviewed = holder.id if holder else None
            if event.action is Action.REVIEW:  # the provider asks us to look into the account
                security_log.warning(
                    "security event: %s %s for account %s: to review",
                    provider,
                    what,
                    reviewed or "(unknown subject)",
                )
            await audit(Outcome.PROVIDER_EVENT, reviewed, what)
            return Applied()
        if identity is None or holder is None:
            await audit(Outcome.PROVIDER_EVENT, None, f"{event.kind}: unknown subject")
            return Applied()
        if event.action is Action.END_SESSIONS:
            only = None if event.every_provider else provider
            ended = await tx.sessions.revoke_all(holder.id, now, provider=only)
            detail = f"{event.kind}: {len(ended)}"
            # tokens-revoked: the provider revoked the tokens it issued to us; the one kept
            # for revocation is useless now, so it is dropped, not sent back.
            if event.kind == "tokens-revoked" and await tx.provider_tokens.take(
                holder.id, provider
            ):
                detail += "; kept token dropped"
            await audit(Outcome.PROVIDER_SIGNED_OUT, holder.id, detail)
            return Applied(ended)
        if event.action is Action.DISABLE_IDENTITY:
            reason = event.reason or "unspecified"
            await tx.accounts.set_identity_disabled(identity, reason)
            # Hijacking: whoever holds a session may be the attacker, whatever the provider
            # used. Other reasons: the sessions this provider vouched for.
            only = None if reason == "hijacking" else provider
            ended = await tx.sessions.revoke_all(holder.id, now, provider=only)
            # Hijacking: the kept token may be the attacker's grant; it is revoked at the
            # provider (at least once; "no longer known" counts as revoked), a new one is kept
            # at the next sign-in once the identity is enabled again.
            queued = 0
            if reason == "hijacking":
                queued = await enqueue_token_revocations(tx, holder.id, now, provider)
            await audit(Outcome.IDENTITY_DISABLED, holder.id, f"{event.kind}: {reason}")
            return Applied(ended, queued)
        if event.action is Action.ENABLE_IDENTITY:
            await tx.accounts.set_identity_disabled(identity, None)
            await audit(Outcome.IDENTITY_ENABLED, holder.id, event.kind)
            return Applied()
        if event.action in (Action.EMAIL_DISABLED, Action.EMAIL_ENABLED):
            disabled = event.action is Action.EMAIL_DISABLED
            await tx.accounts.set_identity_email_disabled(identity, disabled)
            outcome = Outcome.EMAIL_DISABLED if disabled else Outcome.EMAIL_ENABLED
            await audit(outcome, holder.id, event.kind)
            return Applied()
        # REMOVE_IDENTITY arrives alone in a token and goes through the account service.
        await audit(Outcome.PROVIDER_EVENT, holder.id, event.kind)
        return Applied()

    async def _record(self, event: SignInEvent) -> None:
        try:
            await self.events.record(event)
        except Exception:  # the audit trail must not turn a refusal into a 500
            log.exception("could not store a provider event's audit event")


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
