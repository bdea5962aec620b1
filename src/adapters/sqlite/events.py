"""The sign-in event log in SQLite."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Sequence
from typing import Any

from authgate.domain.model import Outcome, SignInEvent

from .db import Database, parse_ts, ts
from .housekeeping import DEFAULT_PURGE_INTERVAL, PeriodicPurge, delete_batches

DEFAULT_RETENTION = dt.timedelta(days=90)


class SqliteEvents:
    """:class:`~authgate.ports.events.SignInEventLog` in a SQLite file. ``record`` drops
    events older than ``retention`` at most once per ``purge_interval``."""

    def __init__(
        self,
        db: Database,
        retention: dt.timedelta = DEFAULT_RETENTION,
        purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL,
    ) -> None:
        self._db = db
        self._retention = retention
        self.housekeeping = PeriodicPurge("old sign-in events", purge_interval)

    def bound(self, db: Database) -> SqliteEvents:
        """The same log writing through ``db`` (a unit of work's), sharing the purge schedule."""
        bound = copy.copy(self)
        bound._db = db
        return bound

    async def record(self, event: SignInEvent) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                """
                INSERT INTO sign_in_events
                    (at, provider, outcome, client_address, user_agent, account_id, detail)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                (
                    ts(event.at),
                    event.provider,
                    event.outcome.value,
                    event.client_address,
                    event.user_agent,
                    event.account_id,
                    event.detail,
                ),
            )
        await self.housekeeping.maybe_run(lambda: self.purge_before(event.at - self._retention))

    async def recent(self, limit: int = 100) -> list[SignInEvent]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                """
                SELECT at, provider, outcome, client_address, user_agent, account_id, detail
                FROM sign_in_events ORDER BY at DESC, id DESC LIMIT ?
                """,
                (max(limit, 0),),
            )
        return [_event(r) for r in rows]

    async def for_account(self, account_id: str, limit: int = 1000) -> list[SignInEvent]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                """
                SELECT at, provider, outcome, client_address, user_agent, account_id, detail
                FROM sign_in_events WHERE account_id = ? ORDER BY at DESC, id DESC LIMIT ?
                """,
                (account_id, max(limit, 0)),
            )
        return [_event(r) for r in rows]

    async def purge_before(self, cutoff: dt.datetime) -> int:
        return await delete_batches(self._db, "sign_in_events", cutoff)


def _event(r: Sequence[Any]) -> SignInEvent:
    return SignInEvent(
        at=parse_ts(r[0]),
        provider=r[1],
        outcome=Outcome(r[2]),
        client_address=r[3],
        user_agent=r[4],
        account_id=r[5],
        detail=r[6],
    )
