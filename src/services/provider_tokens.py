"""Provider tokens: kept sealed at sign-in (:meth:`ProviderTokenService.keep`), queued in the
unit of work of an unlink or an account deletion (:func:`enqueue_token_revocations`: revoked if
and only if the change commits), and revoked at the provider by :class:`RevocationWorker`.
"""

from __future__ import annotations

import datetime as dt
import logging
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
from authgate.services.audit import record_audit
from authgate.services.outbox import OutboxPolicy, OutboxWorker

log = logging.getLogger("authgate.provider_tokens")


@attrs.frozen
class RevocationPolicy(OutboxPolicy):
    """The configurable rules of the revocation worker (``provider_tokens.*``)."""


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


@attrs.define(eq=False, repr=False, slots=False)
class ProviderTokenService:
    """Keeps provider tokens sealed; wakes the worker when revocations were queued."""

    sealer: TokenSealer | None
    worker: RevocationWorker | None = None
    _warned: set[str] = attrs.field(init=False, factory=set)

    async def keep(
        self, tx: Transaction, account_id: str, verified: VerifiedIdentity, now: dt.datetime
    ) -> None:
        """In the sign-in's unit of work: keep the provider's token sealed for ``account_id``
        (replacing the one kept before). Nothing without a token or without keys."""
        token = verified.provider_token
        if token is None:
            return
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
            return
        sealed = self.sealer.seal(token, verified.identity)
        await tx.provider_tokens.put(
            StoredProviderToken(account_id, verified.identity, sealed, now)
        )

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


def or_no_provider_tokens(tokens: ProviderTokenService | None) -> ProviderTokenService:
    """The provider tokens a service keeps: ``tokens``, or none kept when not given."""
    return tokens or ProviderTokenService(None)


class RevocationWorker(OutboxWorker[PendingRevocation]):
    """Processes the revocation outbox in the background (one task per running instance)."""

    name = "revocation worker"
    log = log

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
        super().__init__(outbox=outbox, clock=clock, policy=policy)
        self.units = units
        self.sealer = sealer
        self.revokers = dict(revokers)

    async def attempt(self, pending: PendingRevocation) -> None:
        revoker = self.revokers.get(pending.identity.provider)
        if revoker is None:
            await self.give_up(pending, "the provider is no longer configured")
            return
        if self.sealer is None:
            await self.give_up(pending, "no provider_tokens.keys are configured")
            return
        try:
            token = self.sealer.open(pending.sealed, pending.identity)
        except TokenUnreadable as e:
            await self.give_up(pending, f"cannot open the sealed token: {e}")
            return
        try:
            result = await revoker.revoke(token)
        except RevocationFailed as e:
            await self.failed(pending, str(e))
            return
        detail = f"after {pending.attempts + 1} attempt(s)"
        if result is Revoked.ALREADY_INVALID:
            detail += "; the provider no longer knew the token"
        await self.finish(pending, True, detail)

    def describe(self, pending: PendingRevocation) -> str:
        return (
            f"revocation of a provider token of account {pending.account_id} at "
            f"{pending.identity.provider}"
        )

    async def finish(self, pending: PendingRevocation, done: bool, detail: str) -> None:
        provider = pending.identity.provider
        outcome = (
            Outcome.PROVIDER_TOKEN_REVOKED if done else Outcome.PROVIDER_TOKEN_REVOCATION_FAILED
        )
        async with self.units.begin() as tx:
            await tx.revocations.complete(pending.id)
            at = self.clock.now()
            await record_audit(tx, at, provider, outcome, None, pending.account_id, detail)
        if done:
            log.info(
                "provider token of account %s revoked at %s (%s)",
                pending.account_id,
                provider,
                detail,
            )
        else:
            log.error("%s failed permanently: %s", self.describe(pending), detail)
