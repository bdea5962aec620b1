"""Provider events already seen, in memory (tests, and a single instance)."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import EventId


class MemorySeenEvents:
    """:class:`~authgate.ports.provider_events.SeenEvents` in a dict (atomic on the loop)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], dt.datetime] = {}

    def snapshot(self) -> dict[tuple[str, str], dt.datetime]:
        return dict(self._seen)

    def restore(self, snapshot: dict[tuple[str, str], dt.datetime]) -> None:
        self._seen = snapshot

    async def first_sight(self, event: EventId, now: dt.datetime) -> bool:
        self._seen = {k: v for k, v in self._seen.items() if v > now}
        key = (event.issuer, event.jti)
        if key in self._seen:
            return False
        self._seen[key] = event.expires_at
        return True
