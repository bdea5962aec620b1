"""Provider tokens and the revocation outbox in memory (tests, and a single instance)."""

from __future__ import annotations

import datetime as dt

import attrs

from authgate.domain.model import PendingRevocation, StoredProviderToken


class MemoryProviderTokens:
    """:class:`~authgate.ports.provider_tokens.ProviderTokenStore` in a dict."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], StoredProviderToken] = {}

    def snapshot(self) -> dict[tuple[str, str], StoredProviderToken]:
        return dict(self._tokens)

    def restore(self, snapshot: dict[tuple[str, str], StoredProviderToken]) -> None:
        self._tokens = snapshot

    async def put(self, stored: StoredProviderToken) -> None:
        self._tokens[(stored.account_id, stored.identity.provider)] = stored

    async def take(self, account_id: str, provider: str | None = None) -> list[StoredProviderToken]:
        keys = [
            k for k in self._tokens if k[0] == account_id and (provider is None or k[1] == provider)
        ]
        return [self._tokens.pop(k) for k in sorted(keys)]

    async def for_account(self, account_id: str) -> list[StoredProviderToken]:
        return [t for k, t in sorted(self._tokens.items()) if k[0] == account_id]

    async def sealed_under_other_keys(self, key_id: str, limit: int) -> list[StoredProviderToken]:
        found = [t for _, t in sorted(self._tokens.items()) if t.sealed.key_id != key_id]
        return found[:limit]

    async def replace_sealed(self, stored: StoredProviderToken, old_key_id: str) -> bool:
        key = (stored.account_id, stored.identity.provider)
        current = self._tokens.get(key)
        if current is None or current.sealed.key_id != old_key_id:
            return False
        self._tokens[key] = attrs.evolve(current, sealed=stored.sealed)
        return True


@attrs.define
class _Row:
    pending: PendingRevocation
    leased_until: dt.datetime | None = None
    error: str | None = None


class MemoryRevocationOutbox:
    """:class:`~authgate.ports.provider_tokens.RevocationOutbox` in a dict (one process: the
    lease only matters to a worker that dies, which here takes the rows with it)."""

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}

    def snapshot(self) -> dict[str, _Row]:
        return {k: attrs.evolve(v) for k, v in self._rows.items()}

    def restore(self, snapshot: dict[str, _Row]) -> None:
        self._rows = snapshot

    async def add(self, pending: PendingRevocation) -> None:
        self._rows[pending.id] = _Row(pending)

    async def claim(
        self, now: dt.datetime, lease: dt.timedelta, limit: int
    ) -> list[PendingRevocation]:
        due = [
            r
            for r in self._rows.values()
            if r.pending.next_attempt_at <= now
            and (r.leased_until is None or r.leased_until <= now)
        ]
        due.sort(key=lambda r: (r.pending.next_attempt_at, r.pending.id))
        for row in due[:limit]:
            row.leased_until = now + lease
        return [r.pending for r in due[:limit]]

    async def complete(self, revocation_id: str) -> None:
        self._rows.pop(revocation_id, None)

    async def retry(
        self, revocation_id: str, attempts: int, next_attempt_at: dt.datetime, error: str
    ) -> None:
        row = self._rows.get(revocation_id)
        if row is None:
            return
        row.pending = attrs.evolve(row.pending, attempts=attempts, next_attempt_at=next_attempt_at)
        row.leased_until = None
        row.error = error

    async def pending(self) -> list[PendingRevocation]:
        rows = sorted(self._rows.values(), key=lambda r: (r.pending.created_at, r.pending.id))
        return [r.pending for r in rows]
