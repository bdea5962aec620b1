"""Session records in SQLite."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from authgate.domain.model import SessionRecord

from .db import parse_opt_ts, parse_ts, ts
from .housekeeping import Purging, delete_batches

_SELECT = (
    "SELECT id, account_id, provider, created_at, expires_at, absolute_expires_at, auth_time, "
    "client_address, user_agent, provider_session, revoked_at, passkey_id FROM sessions "
)


def _record(r: Sequence[Any]) -> SessionRecord:
    return SessionRecord(
        id=r[0],
        account_id=r[1],
        provider=r[2],
        created_at=parse_ts(r[3]),
        expires_at=parse_ts(r[4]),
        absolute_expires_at=parse_ts(r[5]),
        auth_time=parse_ts(r[6]),
        client_address=r[7],
        user_agent=r[8],
        provider_session=r[9],
        revoked_at=parse_opt_ts(r[10]),
        passkey_id=r[11],
    )


class SqliteSessionRecords(Purging):
    """:class:`~authgate.ports.session_records.SessionRecords` in a SQLite file (times are
    ISO text in UTC, which sorts and compares like the times). ``add`` purges expired records
    at most once per ``purge_interval``."""

    _purged = "expired sessions"

    async def add(self, record: SessionRecord) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                """
                INSERT INTO sessions (id, account_id, provider, created_at, expires_at,
                    absolute_expires_at, auth_time, client_address, user_agent,
                    provider_session, revoked_at, passkey_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                (
                    record.id,
                    record.account_id,
                    record.provider,
                    ts(record.created_at),
                    ts(record.expires_at),
                    ts(record.absolute_expires_at),
                    ts(record.auth_time),
                    record.client_address,
                    record.user_agent,
                    record.provider_session,
                    ts(record.revoked_at) if record.revoked_at else None,
                    record.passkey_id,
                ),
            )
        await self.housekeeping.maybe_run(lambda: self.purge_expired(record.created_at))

    async def get(self, session_id: str, *, for_change: bool = False) -> SessionRecord | None:
        # for_change needs nothing more: a unit of work holds SQLite's write lock throughout.
        async with self._db.use() as conn:
            rows = list(await conn.execute_fetchall(_SELECT + "WHERE id = ?", (session_id,)))
        return _record(rows[0]) if rows else None

    async def is_live(self, session_id: str, now: dt.datetime) -> bool:
        async with self._db.use() as conn:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT 1 FROM sessions WHERE id = ? AND revoked_at IS NULL AND expires_at > ?",
                    (session_id, ts(now)),
                )
            )
        return bool(rows)

    async def live_for_account(self, account_id: str, now: dt.datetime) -> list[SessionRecord]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                _SELECT + "WHERE account_id = ? AND revoked_at IS NULL AND expires_at > ? "
                "ORDER BY created_at DESC, id",
                (account_id, ts(now)),
            )
        return [_record(r) for r in rows]

    async def extend(self, session_id: str, expires_at: dt.datetime, now: dt.datetime) -> bool:
        async with self._db.use() as conn:
            cursor = await conn.execute(
                """
                UPDATE sessions SET expires_at = MAX(expires_at, MIN(?, absolute_expires_at))
                WHERE id = ? AND revoked_at IS NULL AND expires_at > ?
                """,
                (ts(expires_at), session_id, ts(now)),
            )
            return cursor.rowcount == 1

    async def prove(self, session_id: str, auth_time: dt.datetime, now: dt.datetime) -> bool:
        async with self._db.use() as conn:
            cursor = await conn.execute(
                """
                UPDATE sessions SET auth_time = MAX(auth_time, ?)
                WHERE id = ? AND revoked_at IS NULL AND expires_at > ?
                """,
                (ts(auth_time), session_id, ts(now)),
            )
            return cursor.rowcount == 1

    async def revoke(self, account_id: str, session_id: str, now: dt.datetime) -> bool:
        async with self._db.use() as conn:
            cursor = await conn.execute(
                "UPDATE sessions SET revoked_at = ? WHERE id = ? AND account_id = ? "
                "AND revoked_at IS NULL AND expires_at > ?",
                (ts(now), session_id, account_id, ts(now)),
            )
            return cursor.rowcount == 1

    async def revoke_all(
        self,
        account_id: str,
        now: dt.datetime,
        *,
        keep: str | None = None,
        provider: str | None = None,
        passkey_id: str | None = None,
    ) -> list[str]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                """
                UPDATE sessions SET revoked_at = ?
                WHERE account_id = ? AND revoked_at IS NULL AND expires_at > ?
                    AND (? IS NULL OR id <> ?) AND (? IS NULL OR provider = ?)
                    AND (? IS NULL OR passkey_id = ?)
                RETURNING id
                """,
                (
                    ts(now),
                    account_id,
                    ts(now),
                    keep,
                    keep,
                    provider,
                    provider,
                    passkey_id,
                    passkey_id,
                ),
            )
        return [r[0] for r in rows]

    async def revoke_provider_session(
        self,
        provider: str,
        provider_session: str,
        now: dt.datetime,
        *,
        account_id: str | None = None,
    ) -> list[tuple[str, str]]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                """
                UPDATE sessions SET revoked_at = ?
                WHERE provider = ? AND provider_session = ? AND (? IS NULL OR account_id = ?)
                    AND revoked_at IS NULL AND expires_at > ?
                RETURNING account_id, id
                """,
                (ts(now), provider, provider_session, account_id, account_id, ts(now)),
            )
        return [(r[0], r[1]) for r in rows]

    async def for_account(self, account_id: str) -> list[SessionRecord]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                _SELECT + "WHERE account_id = ? ORDER BY created_at DESC, id", (account_id,)
            )
        return [_record(r) for r in rows]

    async def purge_expired(self, now: dt.datetime) -> int:
        return await delete_batches(self._db, "sessions", now)
