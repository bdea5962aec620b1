"""Provider events already seen, in PostgreSQL (shared by every instance)."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import EventId

from . import rows
from .housekeeping import delete_batch


class PostgresSeenEvents:
    """:class:`~authgate.ports.provider_events.SeenEvents` on a pool or a unit of work's
    connection. The primary key makes two instances receiving one event at once act once.
    Events are few: each insert drops expired rows on the way, one bounded batch (it runs in
    the event's transaction; as every insert removes up to a batch, a backlog cannot grow)."""

    def __init__(self, db: rows.Executor) -> None:
        self._db = db

    async def first_sight(self, event: EventId, now: dt.datetime) -> bool:
        await delete_batch(self._db, "provider_event_ids", now)
        inserted = await self._db.fetchval(
            """
            INSERT INTO provider_event_ids (issuer, jti, seen_at, expires_at)
            VALUES ($1, $2, $3, $4) ON CONFLICT (issuer, jti) DO NOTHING
            RETURNING true
            """,
            event.issuer,
            event.jti,
            rows.utc(now),
            rows.utc(event.expires_at),
        )
        return bool(inserted)
