"""Provider tokens: kept sealed at sign-in, revoked at the provider after an unlink or an
account deletion committed, through an outbox that survives restarts.

* :meth:`ProviderTokenService.keep` runs in the sign-in's unit of work: the token the provider
  issued (when it has a revocation endpoint) is sealed and replaces the one kept before.
* :func:`enqueue_token_revocations` runs in the unit of work of an unlink or a deletion: the
  sealed tokens move into the outbox in the same transaction, so the revocation happens if and
  only if the change committed.
* :class:`RevocationWorker` (started with the application) claims due outbox rows with a lease,
  sends each token to its provider, and deletes the row with an audit event once the provider
  confirmed; a failure is retried with exponential backoff up to a cap, and given up with an
  audit event once the row is older than the maximum age. Delivery is at least once: a worker
  that dies mid-send leaves a lease that runs out, and another worker sends again.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import random
import uuid
from collections.abc import Mapping

import attrs

from authgate.domain.model import (
    Outcome,
    PendingRevocation,
    StoredProviderToken,
    VerifiedIdentity,
)
from authgate.ports.clock import Clock
from authgate.ports.provider_tokens import (
    ProviderTokenStore,
    RevocationFailed,
    RevocationOutbox,
    Revoked,
    TokenRevoker,
    TokenSealer,
    TokenUnreadable,
)
from authgate.ports.unit_of_work import Transaction, UnitOfWork
from authgate.services.audit import audit_event

log = logging.getLogger("authgate.provider_tokens")


@attrs.frozen
class RevocationPolicy:
    """The configurable rules of the revocation worker (``provider_tokens.*``)."""

    retry_initial: dt.timedelta = dt.timedelta(seconds=10)
    retry_max: dt.timedelta = dt.timedelta(hours=1)
    give_up_after: dt.timedelta = dt.timedelta(days=7)
    lease: dt.timedelta = dt.timedelta(seconds=60)
    poll_seconds: float = 5.0
    batch: int = 20

    def delay(self, attempts: int) -> dt.timedelta:
        """The wait after the ``attempts``-th failed attempt: doubling from ``retry_initial``,
        capped at ``retry_max``, shortened by up to a fifth at random so that rows failed
        together spread out (never lengthened: the cap holds)."""
        base = min(
            self.retry_initial.total_seconds() * 2 ** min(attempts - 1, 40),
            self.retry_max.total_seconds(),
        )
        return dt.timedelta(seconds=base * (1 - 0.2 * random.random()))  # noqa: S311 - jitter


async def enqueue_token_revocations(
    tx: Transaction, account_id: str, now: dt.datetime, provider: str | None = None
) -> int:
    """Inside the unit of work that unlinks ``provider`` (or, with None, deletes the account):
    move the account's sealed tokens into the revocation outbox, due at once. The number of
    revocations queued."""
    taken = await tx.provider_tokens.take(account_id, provider)
    for stored in taken:
        await tx.revocations.add(
            PendingRevocation(
                id=uuid.uuid4().hex,
                account_id=account_id,
                identity=stored.identity,
                sealed=stored.sealed,
                created_at=now,
                next_attempt_at=now,
            )
        )
    return len(taken)


class ProviderTokenService:
    """Keeps provider tokens sealed; wakes the worker when revocations were queued."""

    def __init__(self, sealer: TokenSealer | None) -> None:
        self.sealer = sealer
        self.worker: RevocationWorker | None = None
        self._warned: set[str] = set()

    async def keep(
        self, tx: Transaction, account_id: str, verified: VerifiedIdentity, now: dt.datetime
    ) -> None:
        """In the sign-in's unit of work: keep the provider's token sealed for ``account_id``
        (replacing the one kept before). Nothing without a token or without keys."""
        stored = self._sealed(verified, now, account_id)
        if stored is not None:
            await tx.provider_tokens.put(stored)

    def _sealed(
        self, verified: VerifiedIdentity, now: dt.datetime, account_id: str
    ) -> StoredProviderToken | None:
        """The provider's token sealed to be kept for ``account_id``; None without a token or
        without keys."""
        token = verified.provider_token
        if token is None:
            return None
        if self.sealer is None:
            provider = verified.identity.provider
            if provider not in self._warned:
                self._warned.add(provider)
                log.warning(
                    "provider %s has a revocation endpoint but provider_tokens.keys is empty: "
                    "its tokens are not kept, so unlinking it or deleting an account cannot "
                    "revoke them at the provider",
                    provider,
                )
            return None
        sealed = self.sealer.seal(token, verified.identity)
        return StoredProviderToken(account_id, verified.identity, sealed, now)

    async def rekey(self, store: ProviderTokenStore, batch: int = 100) -> int:
        """Re-seal every kept token under the current (first) key, so that an older key can be
        removed from the configuration; the number re-sealed. A token a sign-in replaced
        meanwhile is left as the sign-in wrote it. Raises TokenUnreadable for a token no
        configured key opens (its key was removed too early)."""
        if self.sealer is None:
            return 0
        current = self.sealer.seal_key_id
        done = 0
        while found := await store.sealed_under_other_keys(current, batch):
            for stored in found:
                token = self.sealer.open(stored.sealed, stored.identity)
                resealed = attrs.evolve(stored, sealed=self.sealer.seal(token, stored.identity))
                if await store.replace_sealed(resealed, stored.sealed.key_id):
                    done += 1
        return done

    def queued(self) -> None:
        """Revocations were queued and committed: the worker looks at once."""
        if self.worker is not None:
            self.worker.wake()


class RevocationWorker:
    """Processes the revocation outbox in the background (one task per running instance)."""

    def __init__(
        self,
        *,
        outbox: RevocationOutbox,
        units: UnitOfWork,
        sealer: TokenSealer | None,
        revokers: Mapping[str, TokenRevoker],
        clock: Clock,
        policy: RevocationPolicy,
    ) -> None:
        self.outbox = outbox
        self.units = units
        self.sealer = sealer
        self.revokers = dict(revokers)
        self.clock = clock
        self.policy = policy
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop the task; a row being sent stays leased and is sent again after its lease."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                while await self.run_once() == self.policy.batch:
                    pass  # a full batch: more may be due
            except Exception as e:  # the database may be down: try again next round
                log.warning("revocation worker: %s: %s", type(e).__name__, e)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.policy.poll_seconds)

    async def run_once(self) -> int:
        """Claim the due rows and try each once; the number claimed."""
        now = self.clock.now()
        claimed = await self.outbox.claim(now, self.policy.lease, self.policy.batch)
        for pending in claimed:
            await self._attempt(pending)
        return len(claimed)

    async def _attempt(self, pending: PendingRevocation) -> None:
        provider = pending.identity.provider
        revoker = self.revokers.get(provider)
        if revoker is None:
            await self._give_up(pending, "the provider is no longer configured")
            return
        if self.sealer is None:
            await self._give_up(pending, "no provider_tokens.keys are configured")
            return
        try:
            token = self.sealer.open(pending.sealed, pending.identity)
        except TokenUnreadable as e:
            await self._give_up(pending, f"cannot open the sealed token: {e}")
            return
        try:
            result = await revoker.revoke(token)
        except RevocationFailed as e:
            await self._failed(pending, str(e))
            return
        attempts = pending.attempts + 1
        detail = f"after {attempts} attempt(s)"
        if result is Revoked.ALREADY_INVALID:
            detail += "; the provider no longer knew the token"
        async with self.units.begin() as tx:
            await tx.revocations.complete(pending.id)
            await tx.events.record(
                audit_event(
                    self.clock.now(),
                    provider,
                    Outcome.PROVIDER_TOKEN_REVOKED,
                    None,
                    pending.account_id,
                    detail,
                )
            )
        log.info(
            "provider token of account %s revoked at %s (%s)",
            pending.account_id,
            provider,
            detail,
        )

    async def _failed(self, pending: PendingRevocation, error: str) -> None:
        now = self.clock.now()
        attempts = pending.attempts + 1
        if now - pending.created_at >= self.policy.give_up_after:
            await self._give_up(pending, error, attempts)
            return
        due = now + self.policy.delay(attempts)
        await self.outbox.retry(pending.id, attempts, due, error[:500])
        log.warning(
            "revocation of a provider token of account %s at %s failed (attempt %d, next at "
            "%s): %s",
            pending.account_id,
            pending.identity.provider,
            attempts,
            due.isoformat(timespec="seconds"),
            error,
        )

    async def _give_up(
        self, pending: PendingRevocation, reason: str, attempts: int | None = None
    ) -> None:
        attempts = pending.attempts + 1 if attempts is None else attempts
        detail = f"given up after {attempts} attempt(s): {reason}"
        async with self.units.begin() as tx:
            await tx.revocations.complete(pending.id)
            await tx.events.record(
                audit_event(
                    self.clock.now(),
                    pending.identity.provider,
                    Outcome.PROVIDER_TOKEN_REVOCATION_FAILED,
                    None,
                    pending.account_id,
                    detail,
                )
            )
        log.error(
            "revocation of a provider token of account %s at %s failed permanently: %s",
            pending.account_id,
            pending.identity.provider,
            detail,
        )
