"""Session records in PostgreSQL, shared by every instance."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import asyncpg

from authgate.domain.model import SessionRecord

from . import rows
from .housekeeping import Purging, delete_batches

_SELECT = """
    SELECT id, account_id, provider, created_at, expires_at, absolute_expires_at, auth_time,
        client_address, user_agent, provider_session, revoked_at, passkey_id
    FROM sessions
"""


def _record(row: asyncpg.Record) -> SessionRecord:
    return SessionRecord(
        id=row["id"],
        account_id=row["account_id"],
        provider=row["provider"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        absolute_expires_at=row["absolute_expires_at"],
        auth_time=row["auth_time"],
        client_address=row["client_address"],
        user_agent=row["user_agent"],
        provider_session=row["provider_session"],
        revoked_at=row["revoked_at"],
        passkey_id=row["passkey_id"],
    )


def record_values(record: SessionRecord) -> list[object]:
    """The values of a ``sessions`` row, in its columns' order (id, account_id, provider,
    created_at, expires_at, absolute_expires_at, auth_time, client_address, user_agent,
    provider_session, revoked_at, passkey_id)."""
    return [
        record.id,
        record.account_id,
        record.provider,
        rows.utc(record.created_at),
        rows.utc(record.expires_at),
        rows.utc(record.absolute_expires_at),
        rows.utc(record.auth_time),
        record.client_address,
        record.user_agent,
        record.provider_session,
        rows.utc(record.revoked_at) if record.revoked_at else None,
        record.passkey_id,
    ]


class PostgresSessionRecords(Purging):
    """:class:`~authgate.ports.session_records.SessionRecords` on an asyncpg pool, or on one
    connection of a unit of work (:meth:`bound`). ``add`` triggers a purge of expired
    records at most once per ``purge_interval``."""

    _purged = "expired sessions"

    async def add(self, record: SessionRecord) -> None:
        await rows.write(
            self._db,
            """
            INSERT INTO sessions (id, account_id, provider, created_at, expires_at,
                absolute_expires_at, auth_time, client_address, user_agent, provider_session,
                revoked_at, passkey_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            """,
            *record_values(record),
        )
        self.written(record.created_at)

    async def get(self, session_id: str, *, for_change: bool = False) -> SessionRecord | None:
        # FOR SHARE: READ COMMITTED reads the newest committed version of a row a concurrent
        # revocation is changing once it commits, and a revocation that comes later waits for
        # this unit; a plain read would let a sign-out commit between the check and the change.
        lock = " FOR SHARE" if for_change else ""
        row = await self._db.fetchrow(_SELECT + "WHERE id = $1" + lock, session_id)
        return _record(row) if row is not None else None

    async def is_live(self, session_id: str, now: dt.datetime) -> bool:
        found = await self._db.fetchval(
            "SELECT true FROM sessions WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2",
            session_id,
            rows.utc(now),
        )
        return bool(found)

    async def live_for_account(self, account_id: str, now: dt.datetime) -> list[SessionRecord]:
        found = await self._db.fetch(
            _SELECT + "WHERE account_id = $1 AND revoked_at IS NULL AND expires_at > $2 "
            "ORDER BY created_at DESC, id",
            account_id,
            rows.utc(now),
        )
        return [_record(r) for r in found]

    async def extend(self, session_id: str, expires_at: dt.datetime, now: dt.datetime) -> bool:
        status = await self._db.execute(
            """
            UPDATE sessions SET expires_at = GREATEST(expires_at, LEAST($2, absolute_expires_at))
            WHERE id = $1 AND revoked_at IS NULL AND expires_at > $3
            """,
            session_id,
            rows.utc(expires_at),
            rows.utc(now),
        )
        return rows.affected(status) == 1

    async def prove(self, session_id: str, auth_time: dt.datetime, now: dt.datetime) -> bool:
        status = await self._db.execute(
            """
            UPDATE sessions SET auth_time = GREATEST(auth_time, $2)
            WHERE id = $1 AND revoked_at IS NULL AND expires_at > $3
            """,
            session_id,
            rows.utc(auth_time),
            rows.utc(now),
        )
        return rows.affected(status) == 1

    async def revoke(self, account_id: str, session_id: str, now: dt.datetime) -> bool:
        status = await self._db.execute(
            """
            UPDATE sessions SET revoked_at = $3
            WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL AND expires_at > $3
            """,
            session_id,
            account_id,
            rows.utc(now),
        )
        return rows.affected(status) == 1

    async def revoke_all(
        self,
        account_id: str,
        now: dt.datetime,
        *,
        keep: str | None = None,
        provider: str | None = None,
        passkey_id: str | None = None,
    ) -> list[str]:
        found = await self._db.fetch(
            """
            UPDATE sessions SET revoked_at = $2
            WHERE account_id = $1 AND revoked_at IS NULL AND expires_at > $2
                AND ($3::text IS NULL OR id <> $3) AND ($4::text IS NULL OR provider = $4)
                AND ($5::text IS NULL OR passkey_id = $5)
            RETURNING id
            """,
            account_id,
            rows.utc(now),
            keep,
            provider,
            passkey_id,
        )
        return [r["id"] for r in found]

    async def revoke_provider_session(
        self,
        provider: str,
        provider_session: str,
        now: dt.datetime,
        *,
        account_id: str | None = None,
    ) -> list[tuple[str, str]]:
        found = await self._db.fetch(
            """
            UPDATE sessions SET revoked_at = $3
            WHERE provider = $1 AND provider_session = $2
                AND ($4::text IS NULL OR account_id = $4)
                AND revoked_at IS NULL AND expires_at > $3
            RETURNING account_id, id
            """,
            provider,
            provider_session,
            rows.utc(now),
            account_id,
        )
        return [(r["account_id"], r["id"]) for r in found]

    async def for_account(self, account_id: str) -> list[SessionRecord]:
        found = await self._db.fetch(
            _SELECT + "WHERE account_id = $1 ORDER BY created_at DESC, id", account_id
        )
        return [_record(r) for r in found]

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return delete_batches(self._db, "sessions", now)
