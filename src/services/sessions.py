"""Sessions: issued with a server-side record, verified at stateless speed, ended at will.

A session token stays a self-contained JWT that other services verify with the published
keys; authgate also records each session (by its id, never the token) and refuses one revoked
or unknown. A session found live is trusted for ``live_cache`` (a few seconds) without asking
the store; a revocation clears it from that cache here at once and, through the revocation
channel, on every other instance; with the channel down, ``live_cache`` bounds how long
another instance may still accept a revoked session.
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Protocol, TypedDict, Unpack

import attrs

from authgate.domain import errors
from authgate.domain.model import Caller, ClientInfo, IssuedSession, Outcome, SessionRecord
from authgate.domain.secrets import random_uuid_hex
from authgate.domain.text import printable
from authgate.ports.clock import Clock
from authgate.ports.metrics import Metrics
from authgate.ports.revocations import RevocationChannel
from authgate.ports.session_records import SessionRecords
from authgate.ports.session_tokens import (
    InvalidSession,
    ResumedRequest,
    SessionClaims,
    SessionTokens,
)
from authgate.ports.unit_of_work import Transaction, UnitOfWork
from authgate.services.audit import or_no_metrics, record_audit

log = logging.getLogger("authgate.sessions")

LIVE_CACHE_SIZE = 65_536


class SessionEndings(Protocol):
    """What else ends with a session (authgate as an OpenID Provider: the token families
    issued in it, and the back-channel logouts owed to its clients)."""

    async def ended(
        self, tx: Transaction, ended: Mapping[str, Sequence[str]], now: dt.datetime
    ) -> None:
        """Inside the unit of work that ended them: the sessions ended, by account."""
        ...

    def committed(self) -> None:
        """The unit of work that ended sessions committed (a worker may act now)."""
        ...


class Which(TypedDict, total=False):
    """Which of an account's live sessions end: all but ``keep``; only those issued through
    ``provider``; only those signed in with the passkey ``passkey_id``."""

    keep: str | None
    provider: str | None
    passkey_id: str | None


@attrs.frozen
class SessionPolicy:
    """The configurable rules of sessions (``session.*``)."""

    ttl: dt.timedelta = dt.timedelta(hours=24)
    absolute_max: dt.timedelta = dt.timedelta(days=30)
    reauthenticate_after: dt.timedelta = dt.timedelta(minutes=10)
    live_cache: dt.timedelta = dt.timedelta(seconds=5)
    sliding: bool = True  # a session used after half its lifetime is renewed
    # The providers whose sign-ins prove a login time (a signed auth_time).
    proving_providers: frozenset[str] = frozenset()


@attrs.define(eq=False, repr=False, slots=False, kw_only=True)
class SessionService:
    """Issues, verifies, lists and revokes sessions."""

    tokens: SessionTokens
    records: SessionRecords
    units: UnitOfWork
    channel: RevocationChannel
    clock: Clock
    policy: SessionPolicy
    metrics: Metrics = attrs.field(default=None, converter=or_no_metrics)
    endings: SessionEndings | None = None
    # session id -> monotonic time until which it is trusted as live without a read
    _live: collections.OrderedDict[str, float] = attrs.field(
        init=False, factory=collections.OrderedDict
    )
    # session id -> monotonic time until which a read that began before its revocation
    # must not put it back into the cache
    _revoked: collections.OrderedDict[str, float] = attrs.field(
        init=False, factory=collections.OrderedDict
    )

    def __attrs_post_init__(self) -> None:
        self.channel.subscribe(self.forget)  # revocations made by any instance

    # -- issuing --------------------------------------------------------------------------

    async def issue(
        self,
        tx: Transaction,
        account_id: str,
        provider: str,
        client: ClientInfo,
        *,
        auth_time: dt.datetime,
        provider_session: str | None = None,
        resumes: ResumedRequest | None = None,
        passkey_id: str | None = None,
    ) -> IssuedSession:
        """A new session, recorded in the caller's unit of work (with the sign-in); the caller
        reports it to ``metrics`` once that unit of work has committed. ``resumes``: the
        application's authorization request that started this sign-in, named in the token.
        ``passkey_id``: the passkey that signed in (its removal ends the session)."""
        now = self.clock.now()
        record = SessionRecord(
            id=random_uuid_hex(),
            account_id=account_id,
            provider=provider,
            created_at=now,
            expires_at=self.tokens.expiry(now),
            absolute_expires_at=now + self.policy.absolute_max,
            auth_time=auth_time,
            client_address=printable(client.address, 64),
            user_agent=printable(client.user_agent, 512),
            provider_session=printable(provider_session, 255),
            passkey_id=passkey_id,
        )
        await tx.sessions.add(record)
        return self.tokens.issue(
            record.account_id,
            record.provider,
            record.created_at,
            session_id=record.id,
            auth_time=record.auth_time,
            expires_at=record.expires_at,
            resumes=resumes,
        )

    async def prove(
        self,
        tx: Transaction,
        record: SessionRecord,
        auth_time: dt.datetime,
        *,
        resumes: ResumedRequest | None = None,
    ) -> IssuedSession:
        """The browser's session after a link or a re-authentication made in it: the same
        session (one browser, one session; the applications signed in through it keep their
        tokens), its ``auth_time`` moved to the newer proof, in the caller's unit of work; a
        new token for it."""
        now = self.clock.now()
        proven = max(record.auth_time, auth_time)
        await tx.sessions.prove(record.id, proven, now)
        return self.tokens.issue(
            record.account_id,
            record.provider,
            now,
            session_id=record.id,
            auth_time=proven,
            expires_at=record.expires_at,
            resumes=resumes,
        )

    # -- verifying ------------------------------------------------------------------------

    async def verify(self, token: str) -> SessionClaims:
        """The claims of a valid, live session; :class:`InvalidSession` for a token that does
        not verify and for a session that was revoked or is unknown."""
        now = self.clock.now()
        claims = self.tokens.verify(token, now)
        # The common case first, without a coroutine: a session found live a moment ago.
        until = self._live.get(claims.session_id)
        if until is not None and time.monotonic() < until:
            return claims
        if not await self._is_live(claims.session_id, now):
            raise InvalidSession("the session was revoked or is unknown")
        return claims

    async def is_live(self, session_id: str) -> bool:
        """Whether the session is live, decided as :meth:`verify` decides it, for what else
        names a session (the OpenID Provider's tokens carry it as ``sid``)."""
        until = self._live.get(session_id)
        if until is not None and time.monotonic() < until:
            return True
        return await self._is_live(session_id, self.clock.now())

    async def _is_live(self, session_id: str, now: dt.datetime) -> bool:
        started = time.monotonic()
        self._live.pop(session_id, None)  # expired, if there: both callers looked
        live = await self.records.is_live(session_id, now)
        revoked_until = self._revoked.get(session_id)
        if live and (revoked_until is None or revoked_until < started):
            self._live[session_id] = started + self.policy.live_cache.total_seconds()
            if len(self._live) > LIVE_CACHE_SIZE:
                self._live.popitem(last=False)
        return live

    def forget(self, session_ids: Sequence[str]) -> None:
        """Drop revoked sessions from the cache (the channel calls it on every instance)."""
        keep_until = time.monotonic() + 2 * self.policy.live_cache.total_seconds() + 1
        for sid in session_ids:
            self._live.pop(sid, None)
            self._revoked[sid] = keep_until
            self._revoked.move_to_end(sid)
        now = time.monotonic()
        while self._revoked:
            oldest, until = next(iter(self._revoked.items()))
            if until > now and len(self._revoked) <= LIVE_CACHE_SIZE:
                break
            del self._revoked[oldest]

    async def renew_if_due(self, claims: SessionClaims) -> IssuedSession | None:
        """Sliding sessions: a session used after half its token's lifetime gets a new token (same
        id and auth_time) up to the session's absolute limit; None when not due, switched off, or at
        the limit. The older token stays valid until it expires or the session is revoked."""
        if not self.policy.sliding or claims.issued_at is None:
            return None
        now = self.clock.now()
        if now - claims.issued_at < self.policy.ttl / 2:
            return None
        record = await self.records.get(claims.session_id)
        if record is None or not record.live(now):
            return None
        expires = min(now + self.policy.ttl, record.absolute_expires_at)
        if int(expires.timestamp()) <= int(claims.expires_at.timestamp()):
            return None  # at the absolute limit (tokens count whole seconds): it ends there
        if not await self.records.extend(claims.session_id, expires, now):
            return None
        return self.tokens.issue(
            claims.account_id,
            claims.provider or record.provider,
            now,
            session_id=claims.session_id,
            auth_time=claims.auth_time,
            expires_at=expires,
        )

    def require_recent_authentication(self, auth_time: dt.datetime | None) -> None:
        """RFC 9470: account changes need a sign-in no older than ``reauthenticate_after``;
        :class:`~errors.ReauthenticationRequired` otherwise."""
        max_age = self.policy.reauthenticate_after
        if auth_time is None or self.clock.now() - auth_time > max_age:
            raise errors.ReauthenticationRequired(int(max_age.total_seconds()))

    async def require_recent_sign_in(self, tx: Transaction, caller: Caller) -> None:
        """RFC 9470 for changes an account must always be able to make (its export, its first
        passkey): a recent signed login, as :meth:`require_recent_authentication`, or, for an
        account with no way to prove one (no passkey, no linked provider that signs ``auth_time``),
        the start of its session within the window, recorded by the service (never anything the
        browser carries)."""
        try:
            self.require_recent_authentication(caller.auth_time)
        except errors.ReauthenticationRequired:
            identities = await tx.accounts.list_identities(caller.account_id)
            if any(i.identity.provider in self.policy.proving_providers for i in identities):
                raise
            if await tx.passkeys.for_account(caller.account_id):
                raise
            record = await tx.sessions.get(caller.session_id)
            if record is None or not record.live(self.clock.now()):
                raise
            if self.clock.now() - record.created_at > self.policy.reauthenticate_after:
                raise

    # -- listing and ending ---------------------------------------------------------------

    async def live_sessions(self, account_id: str) -> list[SessionRecord]:
        return await self.records.live_for_account(account_id, self.clock.now())

    async def revoke(
        self,
        account_id: str,
        session_id: str,
        *,
        client: ClientInfo,
        provider: str,
        outcome: Outcome = Outcome.SESSION_REVOKED,
        detail: str | None = None,
    ) -> bool:
        """End one of the account's sessions and owe what ends with it, audited as
        ``outcome``, in one unit of work; announced once committed. False when the account has
        no such live session."""
        now = self.clock.now()
        async with self.units.begin() as tx:
            ended = await self.revoke_in(tx, account_id, session_id, now)
            if ended:
                await record_audit(tx, now, provider, outcome, client, account_id, detail)
        if ended:
            await self.announce([session_id])
        return ended

    async def revoke_all(
        self,
        account_id: str,
        *,
        client: ClientInfo,
        provider: str,
        keep: str | None = None,
        outcome: Outcome = Outcome.SIGNED_OUT_EVERYWHERE,
    ) -> list[str]:
        """End the account's live sessions but ``keep`` (audited as ``outcome``)."""
        now = self.clock.now()
        async with self.units.begin() as tx:
            ended = await self.revoke_all_in(tx, account_id, now, keep=keep)
            detail = f"{len(ended)} sessions"
            await record_audit(tx, now, provider, outcome, client, account_id, detail)
        await self.announce(ended)
        return ended

    async def sign_out(
        self,
        token: str,
        *,
        client: ClientInfo,
        everywhere: bool = False,
        detail: str | None = None,
    ) -> list[str]:
        """End the session of ``token`` (``everywhere``: every session of its account, after the
        RFC 9470 check). Only a live session signs anything out (a copy of a revoked token must not
        end the sessions that followed it): :class:`InvalidSession` otherwise. ``detail``: the
        audit event's (who asked, for a sign-out another page started)."""
        claims = await self.verify(token)
        provider = claims.provider or ""
        if everywhere:
            self.require_recent_authentication(claims.auth_time)
            return await self.revoke_all(claims.account_id, client=client, provider=provider)
        ended = await self.revoke(
            claims.account_id,
            claims.session_id,
            client=client,
            provider=provider,
            outcome=Outcome.SIGNED_OUT,
            detail=detail,
        )
        return [claims.session_id] if ended else []

    # -- ending sessions inside a unit of work: the one way every session ends ------------
    #
    # Whatever ends a session (a sign-out, a revocation, an unlink, a deletion, a provider's
    # event, the operator) ends it through one of these, so what ends with a session
    # (:class:`SessionEndings`) happens in the same transaction; :meth:`announce` follows the
    # commit.

    async def revoke_in(
        self, tx: Transaction, account_id: str, session_id: str, now: dt.datetime
    ) -> bool:
        """In ``tx``: end one of the account's sessions; False when it has no such live one."""
        revoked = await tx.sessions.revoke(account_id, session_id, now)
        if revoked:
            await self._ended(tx, {account_id: [session_id]}, now)
        return revoked

    async def revoke_all_in(
        self, tx: Transaction, account_id: str, now: dt.datetime, **which: Unpack[Which]
    ) -> list[str]:
        """In ``tx``: end the account's live sessions chosen by ``which``; the ids ended."""
        ended = await tx.sessions.revoke_all(account_id, now, **which)
        await self._ended(tx, {account_id: ended}, now)
        return ended

    async def revoke_provider_session_in(
        self,
        tx: Transaction,
        provider: str,
        provider_session: str,
        now: dt.datetime,
        *,
        account_id: str | None = None,
    ) -> dict[str, list[str]]:
        """In ``tx``: end the live sessions signed in through ``provider`` whose provider
        session is ``provider_session`` (only the account's when given); those ended, by
        account."""
        pairs = await tx.sessions.revoke_provider_session(
            provider, provider_session, now, account_id=account_id
        )
        by_account: dict[str, list[str]] = {}
        for holder, sid in pairs:
            by_account.setdefault(holder, []).append(sid)
        await self._ended(tx, by_account, now)
        return by_account

    async def _ended(
        self, tx: Transaction, ended: Mapping[str, Sequence[str]], now: dt.datetime
    ) -> None:
        if self.endings is not None and any(ended.values()):
            await self.endings.ended(tx, ended, now)

    async def announce(self, session_ids: Sequence[str]) -> None:
        """After revocations committed: forget them here at once, and tell the others."""
        if not session_ids:
            return
        if self.endings is not None:
            self.endings.committed()
        self.forget(session_ids)
        await self.channel.publish(session_ids)
        self.metrics.sessions_revoked(len(session_ids))
        log.info("sessions revoked: %d", len(session_ids))
