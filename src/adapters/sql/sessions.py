"""Session records."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

from authgate.domain.model import SessionRecord

from .engine import Row, insert
from .housekeeping import Purging

_COLUMNS = (
    "id, account_id, provider, created_at, expires_at, absolute_expires_at, auth_time, "
    "client_address, user_agent, provider_session, revoked_at, passkey_id"
)
_SELECT = f"SELECT {_COLUMNS} FROM sessions "  # noqa: S608 - constant columns
_INSERT = insert("sessions", _COLUMNS)
_LIVE = "revoked_at IS NULL AND expires_at > "


class SqlSessionRecords(Purging):
    """:class:`~authgate.ports.session_records.SessionRecords`; ``add`` (in a unit of work,
    waiting for its other writes) triggers the purge of expired records."""

    _purged = "expired sessions"

    async def add(self, record: SessionRecord) -> None:
        time = self._sql.time
        await self._db.write(
            _INSERT,
            record.id,
            record.account_id,
            record.provider,
            time(record.created_at),
            time(record.expires_at),
            time(record.absolute_expires_at),
            time(record.auth_time),
            record.client_address,
            record.user_agent,
            record.provider_session,
            time(record.revoked_at) if record.revoked_at else None,
            record.passkey_id,
        )
        await self.written(record.created_at)

    async def get(self, session_id: str, *, for_change: bool = False) -> SessionRecord | None:
        # FOR SHARE: READ COMMITTED reads the newest committed version of a row a concurrent
        # revocation is changing once it commits, and a revocation that comes later waits for
        # this unit; a plain read would let a sign-out commit between the check and the change.
        # (SQLite's unit of work holds the file's write lock throughout: no lock needed.)
        lock = self._sql.lock("SHARE") if for_change else ""
        row = await self._db.fetchrow(_SELECT + "WHERE id = $1" + lock, session_id)
        return self._record(row) if row is not None else None

    async def is_live(self, session_id: str, now: dt.datetime) -> bool:
        found = await self._db.fetchrow(
            f"SELECT true FROM sessions WHERE id = $1 AND {_LIVE}$2",  # noqa: S608
            session_id,
            self._sql.time(now),
        )
        return found is not None

    async def live_for_account(self, account_id: str, now: dt.datetime) -> list[SessionRecord]:
        found = await self._db.fetch(
            _SELECT + f"WHERE account_id = $1 AND {_LIVE}$2 ORDER BY created_at DESC, id",
            account_id,
            self._sql.time(now),
        )
        return [self._record(r) for r in found]

    async def extend(self, session_id: str, expires_at: dt.datetime, now: dt.datetime) -> bool:
        bound = f"{self._sql.least}($2, absolute_expires_at)"
        return await self._raise("expires_at", bound, session_id, expires_at, now)

    async def prove(self, session_id: str, auth_time: dt.datetime, now: dt.datetime) -> bool:
        return await self._raise("auth_time", "$2", session_id, auth_time, now)

    async def _raise(
        self, column: str, to: str, session_id: str, value: dt.datetime, now: dt.datetime
    ) -> bool:
        """Move a live session's ``column`` up to ``to`` (``$2``: ``value``), never down."""
        sql = self._sql
        changed = await self._db.execute(
            f"UPDATE sessions SET {column} = {sql.greatest}({column}, {to}) "  # noqa: S608
            f"WHERE id = $1 AND {_LIVE}$3",
            session_id,
            sql.time(value),
            sql.time(now),
        )
        return changed == 1

    async def revoke(self, account_id: str, session_id: str, now: dt.datetime) -> bool:
        changed = await self._db.execute(
            "UPDATE sessions SET revoked_at = $3 "  # noqa: S608
            f"WHERE id = $1 AND account_id = $2 AND {_LIVE}$3",
            session_id,
            account_id,
            self._sql.time(now),
        )
        return changed == 1

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
            f"""
            UPDATE sessions SET revoked_at = $2
            WHERE account_id = $1 AND {_LIVE}$2
                AND (CAST($3 AS TEXT) IS NULL OR id <> $3)
                AND (CAST($4 AS TEXT) IS NULL OR provider = $4)
                AND (CAST($5 AS TEXT) IS NULL OR passkey_id = $5)
            RETURNING id
            """,  # noqa: S608 - a constant
            account_id,
            self._sql.time(now),
            keep,
            provider,
            passkey_id,
        )
        return [r[0] for r in found]

    async def revoke_provider_session(
        self,
        provider: str,
        provider_session: str,
        now: dt.datetime,
        *,
        account_id: str | None = None,
    ) -> list[tuple[str, str]]:
        found = await self._db.fetch(
            f"""
            UPDATE sessions SET revoked_at = $3
            WHERE provider = $1 AND provider_session = $2
                AND (CAST($4 AS TEXT) IS NULL OR account_id = $4) AND {_LIVE}$3
            RETURNING account_id, id
            """,  # noqa: S608 - a constant
            provider,
            provider_session,
            self._sql.time(now),
            account_id,
        )
        return [(r[0], r[1]) for r in found]

    async def for_account(self, account_id: str) -> list[SessionRecord]:
        found = await self._db.fetch(
            _SELECT + "WHERE account_id = $1 ORDER BY created_at DESC, id", account_id
        )
        return [self._record(r) for r in found]

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return self._batches("sessions", now)

    def _record(self, r: Row) -> SessionRecord:
        read = self._sql.read_time
        return SessionRecord(
            id=r[0],
            account_id=r[1],
            provider=r[2],
            created_at=read(r[3]),
            expires_at=read(r[4]),
            absolute_expires_at=read(r[5]),
            auth_time=read(r[6]),
            client_address=r[7],
            user_agent=r[8],
            provider_session=r[9],
            revoked_at=read(r[10]) if r[10] is not None else None,
            passkey_id=r[11],
        )
