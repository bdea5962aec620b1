"""The sign-in event log, and the provider events already seen."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

from authgate.domain.model import EventId, Outcome, SignInEvent

from .engine import Db, Dialect, Row, insert
from .housekeeping import DEFAULT_PURGE_INTERVAL, Purging, Repository, delete_batch, total

DEFAULT_RETENTION = dt.timedelta(days=90)

_EVENT_COLUMNS = "at, provider, outcome, client_address, user_agent, account_id, detail"
_INSERT_EVENT = insert("sign_in_events", _EVENT_COLUMNS)
_SELECT = f"SELECT {_EVENT_COLUMNS} FROM sign_in_events"  # noqa: S608 - constant columns


class SqlEvents(Purging):
    """:class:`~authgate.ports.events.SignInEventLog`. ``record`` triggers, at most once per
    ``purge_interval``, the removal of events older than ``retention`` (relative to the
    recorded event's time); in a unit of work it waits for the unit's other writes."""

    _purged = "old sign-in events"

    def __init__(
        self,
        db: Db,
        sql: Dialect,
        retention: dt.timedelta = DEFAULT_RETENTION,
        purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL,
    ) -> None:
        super().__init__(db, sql, purge_interval)
        self._retention = retention

    async def record(self, event: SignInEvent) -> None:
        await self._db.write(
            _INSERT_EVENT,
            self._sql.time(event.at),
            event.provider,
            event.outcome.value,
            event.client_address,
            event.user_agent,
            event.account_id,
            event.detail,
        )
        await self.written(event.at)

    async def recent(self, limit: int = 100) -> list[SignInEvent]:
        found = await self._db.fetch(f"{_SELECT} ORDER BY at DESC, id DESC LIMIT $1", max(limit, 0))
        return [self._event(r) for r in found]

    async def for_account(self, account_id: str, limit: int = 1000) -> list[SignInEvent]:
        found = await self._db.fetch(
            f"{_SELECT} WHERE account_id = $1 ORDER BY at DESC, id DESC LIMIT $2",
            account_id,
            max(limit, 0),
        )
        return [self._event(r) for r in found]

    async def purge_before(self, cutoff: dt.datetime) -> int:
        return await total(self._batches("sign_in_events", cutoff))

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return self._batches("sign_in_events", now - self._retention)

    def _event(self, r: Row) -> SignInEvent:
        return SignInEvent(
            at=self._sql.read_time(r[0]),
            provider=r[1],
            outcome=Outcome(r[2]),
            client_address=r[3],
            user_agent=r[4],
            account_id=r[5],
            detail=r[6],
        )


class SqlSeenEvents(Repository):
    """:class:`~authgate.ports.provider_events.SeenEvents`. The primary key makes two
    instances receiving one event at once act once. Events are few: each insert drops expired
    rows on the way, one bounded batch (in the event's transaction; as every insert removes up
    to a batch, a backlog cannot grow)."""

    async def first_sight(self, event: EventId, now: dt.datetime) -> bool:
        await delete_batch(self._db, self._sql, "provider_event_ids", now)
        inserted = await self._db.fetchrow(
            """
            INSERT INTO provider_event_ids (issuer, jti, seen_at, expires_at)
            VALUES ($1, $2, $3, $4) ON CONFLICT (issuer, jti) DO NOTHING
            RETURNING true
            """,
            event.issuer,
            event.jti,
            self._sql.time(now),
            self._sql.time(event.expires_at),
        )
        return inserted is not None
