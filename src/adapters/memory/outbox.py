"""The outboxes in memory (tests, and a single instance), whatever their rows hold, and the
sealed provider tokens."""

from __future__ import annotations

import datetime as dt
from typing import Any, Generic

import attrs

from authgate.domain.model import PendingRevocation, StoredProviderToken
from authgate.domain.openid.logout import PendingLogout
from authgate.ports.outbox import P

from .journal import OneTable


@attrs.frozen
class OutboxRow(Generic[P]):
    pending: P
    leased_until: dt.datetime | None = None
    error: str | None = None


def _claimable(row: OutboxRow[Any], now: dt.datetime) -> bool:
    """Due at ``now`` and not leased."""
    return row.pending.next_attempt_at <= now and (
        row.leased_until is None or row.leased_until <= now
    )


class MemoryOutbox(OneTable[str, OutboxRow[P]]):
    """:class:`~authgate.ports.outbox.Outbox` in a dict (one process: the lease only matters to
    a worker that dies, which here takes the rows with it)."""

    async def add(self, pending: P) -> None:
        if pending.id in self._rows:
            raise ValueError("an outbox row with this id is kept already")
        self._rows[pending.id] = OutboxRow(pending)

    async def due(self, now: dt.datetime) -> bool:
        return any(_claimable(r, now) for r in self._rows.values())

    async def claim(self, now: dt.datetime, lease: dt.timedelta, limit: int) -> list[P]:
        due = [r for r in self._rows.values() if _claimable(r, now)]
        due.sort(key=lambda r: (r.pending.next_attempt_at, r.pending.id))
        for row in due[:limit]:
            self._rows[row.pending.id] = attrs.evolve(row, leased_until=now + lease)
        return [r.pending for r in due[:limit]]

    async def complete(self, pending_id: str) -> None:
        self._rows.pop(pending_id)

    async def retry(
        self, pending_id: str, attempts: int, next_attempt_at: dt.datetime, error: str
    ) -> None:
        row = self._rows.get(pending_id)
        if row is None:
            return
        # Every outbox row is an attrs record (the protocol cannot say so).
        pending: Any = row.pending
        self._rows[pending_id] = OutboxRow(
            attrs.evolve(pending, attempts=attempts, next_attempt_at=next_attempt_at),
            leased_until=None,
            error=error,
        )

    async def pending(self) -> list[P]:
        rows = sorted(self._rows.values(), key=lambda r: (r.pending.created_at, r.pending.id))
        return [r.pending for r in rows]


class MemoryLogoutOutbox(MemoryOutbox[PendingLogout]):
    """:class:`~authgate.ports.openid.LogoutOutbox` in a dict."""


class MemoryProviderTokens(OneTable[tuple[str, str], StoredProviderToken]):
    """:class:`~authgate.ports.provider_tokens.ProviderTokenStore` in a dict."""

    async def put(self, stored: StoredProviderToken) -> None:
        self._rows[(stored.account_id, stored.identity.provider)] = stored

    async def take(self, account_id: str, provider: str | None = None) -> list[StoredProviderToken]:
        keys = [
            k for k in self._rows if k[0] == account_id and (provider is None or k[1] == provider)
        ]
        taken = [self._rows[k] for k in sorted(keys)]
        self._rows.delete_where(keys)
        return taken

    async def for_account(self, account_id: str) -> list[StoredProviderToken]:
        return [t for k, t in sorted(self._rows.items()) if k[0] == account_id]

    async def sealed_under_other_keys(self, key_id: str, limit: int) -> list[StoredProviderToken]:
        found = [t for _, t in sorted(self._rows.items()) if t.sealed.key_id != key_id]
        return found[:limit]

    async def replace_sealed(self, stored: StoredProviderToken, old_key_id: str) -> bool:
        key = (stored.account_id, stored.identity.provider)
        current = self._rows.get(key)
        if current is None or current.sealed.key_id != old_key_id:
            return False
        self._rows[key] = attrs.evolve(current, sealed=stored.sealed)
        return True


class MemoryRevocationOutbox(MemoryOutbox[PendingRevocation]):
    """:class:`~authgate.ports.provider_tokens.RevocationOutbox` in a dict."""
