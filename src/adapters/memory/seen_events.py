"""Provider events already seen, in memory (tests, and a single instance)."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import EventId

from .journal import Journal, Table


class MemorySeenEvents:
    """:class:`~authgate.ports.provider_events.SeenEvents` in a dict (atomic on the loop)."""

    def __init__(self) -> None:
        self._seen: Table[tuple[str, str], dt.datetime] = Table()

    def join(self, journal: Journal) -> None:
        """Note this store's writes within a unit in ``journal`` (the unit of work's)."""
        journal.watch(self._seen)

    def snapshot(self) -> dict[tuple[str, str], dt.datetime]:
        """The events held, with their expiry."""
        return self._seen.copy()

    async def first_sight(self, event: EventId, now: dt.datetime) -> bool:
        self._seen.delete_where([k for k, v in self._seen.items() if v <= now])
        key = (event.issuer, event.jti)
        if key in self._seen:
            return False
        self._seen[key] = event.expires_at
        return True
