"""Provider events already seen, in SQLite."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import EventId

from .db import Database, ts
from .housekeeping import delete_batch


class SqliteSeenEvents:
    """:class:`~authgate.ports.provider_events.SeenEvents` in a SQLite file. Events are few
    (a provider's notifications, not requests): each insert drops expired rows on the way, one
    bounded batch (in the event's transaction; every insert removes up to a batch)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def first_sight(self, event: EventId, now: dt.datetime) -> bool:
        async with self._db.transaction() as conn:
            await delete_batch(conn, "provider_event_ids", now)
            cursor = await conn.execute(
                "INSERT INTO provider_event_ids (issuer, jti, seen_at, expires_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (issuer, jti) DO NOTHING",
                (event.issuer, event.jti, ts(now), ts(event.expires_at)),
            )
            return cursor.rowcount == 1
