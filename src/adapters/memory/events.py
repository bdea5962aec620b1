"""Sign-in events (bounded) and provider events already seen, in memory."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import EventId, SignInEvent

from .journal import Log, OneTable, Stored


class MemoryEvents(Stored):
    def __init__(self, max_events: int = 10_000) -> None:
        self._events: Log[SignInEvent] = Log(max_events)

    def snapshot(self) -> list[SignInEvent]:
        """The events held, oldest first."""
        return list(self._events)

    async def record(self, event: SignInEvent) -> None:
        self._events.append(event)

    async def recent(self, limit: int = 100) -> list[SignInEvent]:
        # By time, as the SQL adapters order them; a stable sort keeps the later-recorded
        # first among events of the same time.
        return sorted(reversed(self._events), key=lambda e: e.at, reverse=True)[: max(limit, 0)]

    async def for_account(self, account_id: str, limit: int = 1000) -> list[SignInEvent]:
        mine = [e for e in await self.recent(len(self._events)) if e.account_id == account_id]
        return mine[: max(limit, 0)]

    async def purge_before(self, cutoff: dt.datetime) -> int:
        before = len(self._events)
        self._events.replace([e for e in self._events if e.at >= cutoff])
        return before - len(self._events)


class MemorySeenEvents(OneTable[tuple[str, str], dt.datetime]):
    """:class:`~authgate.ports.provider_events.SeenEvents` in a dict: the events seen, with
    their expiry."""

    async def first_sight(self, event: EventId, now: dt.datetime) -> bool:
        self._rows.delete_if(lambda expires_at: expires_at <= now)
        key = (event.issuer, event.jti)
        if key in self._rows:
            return False
        self._rows[key] = event.expires_at
        return True
