"""Device authorizations in memory (tests, and a single instance)."""

from __future__ import annotations

import datetime as dt

import attrs

from authgate.domain.openid.device import (
    APPROVED,
    DENIED,
    PENDING,
    USED,
    DeviceAuthorization,
)

from .journal import OneTable


class MemoryDeviceAuthorizations(OneTable[str, DeviceAuthorization]):
    """:class:`~authgate.ports.device_authorizations.DeviceAuthorizations` in a dict by the
    device code's digest (units run one at a time: a read is as good as a lock)."""

    def drop_account(self, account_id: str) -> None:
        """The account was deleted: the authorizations it decided go with it."""
        self._rows.delete_if(lambda a: a.account_id == account_id)

    async def add(self, authorization: DeviceAuthorization) -> None:
        if authorization.device_code_hash in self._rows:
            raise ValueError("a device authorization with this digest is kept already")
        # The expired ones go as new ones come (rows live minutes; they are few).
        self._rows.delete_if(lambda a: a.expires_at <= authorization.created_at)
        self._rows[authorization.device_code_hash] = authorization

    async def pending(self, user_code_hash: str, now: dt.datetime) -> DeviceAuthorization | None:
        for row in self._rows.values():
            if row.user_code_hash == user_code_hash and row.status == PENDING and row.live(now):
                return row
        return None

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
        row = await self.pending(user_code_hash, now)
        if row is None:
            return None
        decided = attrs.evolve(
            row,
            status=APPROVED if approved else DENIED,
            account_id=account_id,
            session_id=session_id,
            auth_time=auth_time,
        )
        self._rows[row.device_code_hash] = decided
        return decided

    async def polling(self, device_code_hash: str) -> DeviceAuthorization | None:
        return self._rows.get(device_code_hash)

    async def polled(self, device_code_hash: str, now: dt.datetime, interval: int) -> None:
        row = self._rows.get(device_code_hash)
        if row is not None:
            self._rows[device_code_hash] = attrs.evolve(row, last_polled_at=now, interval=interval)

    async def use(self, device_code_hash: str, now: dt.datetime) -> DeviceAuthorization | None:
        row = self._rows.get(device_code_hash)
        if row is None or row.status != APPROVED or not row.live(now):
            return None
        used = attrs.evolve(row, status=USED, last_polled_at=now)
        self._rows[device_code_hash] = used
        return used

    async def purge_expired(self, now: dt.datetime) -> int:
        return self._rows.delete_if(lambda a: a.expires_at <= now)
