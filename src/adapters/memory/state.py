"""Pending sign-ins in memory (single instance only: a second instance cannot see them)."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import PendingSignIn
from authgate.ports.state import StateExists


class MemoryStates:
    def __init__(self, max_entries: int = 100_000) -> None:
        self._pending: dict[str, PendingSignIn] = {}
        self._max = max_entries

    async def put(self, pending: PendingSignIn) -> None:
        existing = self._pending.get(pending.state)
        # An expired entry no longer holds its state value (as in the SQL adapters).
        if existing is not None and existing.expires_at > pending.created_at:
            raise StateExists(pending.state)
        self._pending.pop(pending.state, None)
        if len(self._pending) >= self._max:
            # Bounded memory under a flood of initiations: drop the expired, then the oldest.
            await self.purge_expired(pending.created_at)
            while len(self._pending) >= self._max:
                del self._pending[next(iter(self._pending))]
        self._pending[pending.state] = pending

    async def take(self, state: str, now: dt.datetime) -> PendingSignIn | None:
        pending = self._pending.pop(state, None)
        if pending is None or pending.expires_at <= now:
            return None
        return pending

    async def purge_expired(self, now: dt.datetime) -> int:
        expired = [k for k, v in self._pending.items() if v.expires_at <= now]
        for k in expired:
            del self._pending[k]
        return len(expired)
