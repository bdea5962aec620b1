"""Provider events already seen, in PostgreSQL (shared by every instance)."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import EventId

from . import rows


class PostgresSeenEvents:
    """:class:`~authgate.ports.provider_events.SeenEvents` on a pool or a unit of work's
    connection. The primary key makes two instances receiving one event at once act once.
    Events are few: expired rows are dropped at each insert (an indexed range)."""

    def __init__(self, db: rows.Executor) -> None:
        self._db = db

    async def first_sight(self, event: EventId, now: dt.datetime) -> bool:
        await self._db.execute(
            "DELETE FROM provider_event_ids WHERE expires_at <= $1", rows.utc(now)
        )
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
