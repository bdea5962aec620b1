"""Provider events already seen, in memory (tests, and a single instance)."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import EventId

from .journal import OneTable


class MemorySeenEvents(OneTable[tuple[str, str], dt.datetime]):
    """:class:`~authgate.ports.provider_events.SeenEvents` in a dict (atomic on the loop): the
    events seen, with their expiry."""

    async def first_sight(self, event: EventId, now: dt.datetime) -> bool:
        self._rows.delete_if(lambda expires_at: expires_at <= now)
        key = (event.issuer, event.jti)
        if key in self._rows:
            return False
        self._rows[key] = event.expires_at
        return True
