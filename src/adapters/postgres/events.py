"""The sign-in event log in PostgreSQL."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

from authgate.domain.model import SignInEvent

from . import rows
from .housekeeping import DEFAULT_PURGE_INTERVAL, PeriodicPurge, delete_batches, total
from .pool import ConnectionPool

DEFAULT_RETENTION = dt.timedelta(days=90)


class PostgresEvents(rows.Bindable):
    """:class:`~authgate.ports.events.SignInEventLog` on the adapters' connection pool; a copy
    ``bound`` to a unit of work writes through its transaction, and purges still run on the
    pool, after the fact.

    ``record`` triggers, at most once per ``purge_interval``, the removal of events older than
    ``retention`` (relative to the recorded event's time).
    """

    def __init__(
        self,
        pool: ConnectionPool,
        retention: dt.timedelta = DEFAULT_RETENTION,
        purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL,
    ) -> None:
        super().__init__(pool)
        self._owner = self  # the pool's instance: bound copies report to it
        self._retention = retention
        self._last_at: dt.datetime | None = None
        self.housekeeping = PeriodicPurge("old sign-in events", self._purge, purge_interval)

    async def record(self, event: SignInEvent) -> None:
        at = rows.utc(event.at)
        await rows.write(
            self._db,
            """
            INSERT INTO sign_in_events
                (at, provider, outcome, client_address, user_agent, account_id, detail)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """,
            at,
            event.provider,
            event.outcome.value,
            event.client_address,
            event.user_agent,
            event.account_id,
            event.detail,
        )
        self.written(at)

    def written(self, at: dt.datetime) -> None:
        """After an event was written (here or in a statement of its unit of work's): the
        purge of old events, when due."""
        self._owner._last_at = rows.utc(at)
        self.housekeeping.trigger()

    async def recent(self, limit: int = 100) -> list[SignInEvent]:
        found = await self._db.fetch(
            """
            SELECT at, provider, outcome, client_address, user_agent, account_id, detail
            FROM sign_in_events ORDER BY at DESC, id DESC LIMIT $1
            """,
            max(limit, 0),
        )
        return [rows.sign_in_event(r) for r in found]

    async def for_account(self, account_id: str, limit: int = 1000) -> list[SignInEvent]:
        found = await self._db.fetch(
            """
            SELECT at, provider, outcome, client_address, user_agent, account_id, detail
            FROM sign_in_events WHERE account_id = $1 ORDER BY at DESC, id DESC LIMIT $2
            """,
            account_id,
            max(limit, 0),
        )
        return [rows.sign_in_event(r) for r in found]

    async def purge_before(self, cutoff: dt.datetime) -> int:
        return await total(self._older(cutoff))

    def _older(self, cutoff: dt.datetime) -> AsyncIterator[int]:
        return delete_batches(self._db, "sign_in_events", cutoff)

    async def _purge(self) -> AsyncIterator[int]:
        if self._last_at is not None:
            async for deleted in self._older(self._last_at - self._retention):
                yield deleted
