"""Device authorizations (RFC 8628), once for both engines: a decision and a use are each one
``UPDATE … WHERE status = …``; a poll reads its row locked (PostgreSQL; SQLite's unit of work
holds the file's write lock) so that two concurrent polls cannot both pass the interval."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

from authgate.domain.openid.device import APPROVED, DENIED, PENDING, USED, DeviceAuthorization

from .engine import Row, insert
from .housekeeping import Purging

_TABLE = "oauth_device_authorizations"
_COLUMNS = (
    "device_code_hash, user_code_hash, client_id, scopes, status, created_at, expires_at, "
    "poll_interval, last_polled_at, account_id, session_id, auth_time"
)
_INSERT = insert(_TABLE, _COLUMNS)
_EXPIRED = "expires_at <= $1"


class SqlDeviceAuthorizations(Purging):
    """:class:`~authgate.ports.device_authorizations.DeviceAuthorizations`; ``add`` triggers
    the purge of expired authorizations."""

    _purged = "expired device authorizations"

    async def add(self, authorization: DeviceAuthorization) -> None:
        sql = self._sql
        await self._db.write(
            _INSERT,
            authorization.device_code_hash,
            authorization.user_code_hash,
            authorization.client_id,
            sql.scopes(authorization.scopes),
            authorization.status,
            sql.time(authorization.created_at),
            sql.time(authorization.expires_at),
            authorization.interval,
            None,
            None,
            None,
            None,
        )
        await self.written(authorization.created_at)

    async def pending(self, user_code_hash: str, now: dt.datetime) -> DeviceAuthorization | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM {_TABLE} "  # noqa: S608 - constant names
            "WHERE user_code_hash = $1 AND status = $2 AND expires_at > $3",
            user_code_hash,
            PENDING,
            self._sql.time(now),
        )
        return None if row is None else self._read(row)

    async def decide(
        self,
        user_code_hash: str,
        now: dt.datetime,
        *,
        approved: bool,
        account_id: str,
        session_id: str,
        auth_time: dt.datetime,
    ) -> DeviceAuthorization | None:
        sql = self._sql
        key = sql.account_key(account_id)
        if key is None:
            return None
        row = await self._db.fetchrow(
            f"UPDATE {_TABLE} SET status = $4, account_id = $5, session_id = $6, "  # noqa: S608
            "auth_time = $7 "
            "WHERE user_code_hash = $1 AND status = $2 AND expires_at > $3 "
            f"RETURNING {_COLUMNS}",
            user_code_hash,
            PENDING,
            sql.time(now),
            APPROVED if approved else DENIED,
            key,
            session_id,
            sql.time(auth_time),
        )
        return None if row is None else self._read(row)

    async def polling(self, device_code_hash: str) -> DeviceAuthorization | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM {_TABLE} "  # noqa: S608 - constant names
            f"WHERE device_code_hash = $1{self._sql.lock('UPDATE')}",
            device_code_hash,
        )
        return None if row is None else self._read(row)

    async def polled(self, device_code_hash: str, now: dt.datetime, interval: int) -> None:
        await self._db.write(
            f"UPDATE {_TABLE} SET last_polled_at = $2, poll_interval = $3 "  # noqa: S608
            "WHERE device_code_hash = $1",
            device_code_hash,
            self._sql.time(now),
            interval,
        )

    async def use(self, device_code_hash: str, now: dt.datetime) -> DeviceAuthorization | None:
        row = await self._db.fetchrow(
            f"UPDATE {_TABLE} SET status = $3, last_polled_at = $4 "  # noqa: S608
            "WHERE device_code_hash = $1 AND status = $2 AND expires_at > $4 "
            f"RETURNING {_COLUMNS}",
            device_code_hash,
            APPROVED,
            USED,
            self._sql.time(now),
        )
        return None if row is None else self._read(row)

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return self._purge(now)

    async def _purge(self, now: dt.datetime) -> AsyncIterator[int]:
        statement = self._sql.batch_delete(_TABLE, "expires_at", _EXPIRED)
        batch = 1_000
        while True:
            deleted = await self._db.execute(statement, self._sql.time(now), batch)
            yield deleted
            if deleted < batch:
                return

    def _read(self, r: Row) -> DeviceAuthorization:
        read = self._sql.read_time
        return DeviceAuthorization(
            device_code_hash=r[0],
            user_code_hash=r[1],
            client_id=r[2],
            scopes=self._sql.read_scopes(r[3]),
            status=r[4],
            created_at=read(r[5]),
            expires_at=read(r[6]),
            interval=int(r[7]),
            last_polled_at=read(r[8]) if r[8] is not None else None,
            account_id=str(r[9]) if r[9] is not None else None,
            session_id=r[10],
            auth_time=read(r[11]) if r[11] is not None else None,
        )
