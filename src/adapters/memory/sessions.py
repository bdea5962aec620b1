"""Session records in memory (tests, and a single instance)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import attrs

from authgate.domain.model import SessionRecord

from .journal import OneTable


class MemorySessionRecords(OneTable[str, SessionRecord]):
    """:class:`~authgate.ports.session_records.SessionRecords` in a dict."""

    def __init__(self) -> None:
        super().__init__()
        self._owed: Callable[[str], bool] | None = None

    async def add(self, record: SessionRecord) -> None:
        self._rows[record.id] = record

    async def get(self, session_id: str, *, for_change: bool = False) -> SessionRecord | None:
        # for_change needs nothing more: memory units of work run one at a time.
        return self._rows.get(session_id)

    async def is_live(self, session_id: str, now: dt.datetime) -> bool:
        record = self._rows.get(session_id)
        return record is not None and record.live(now)

    async def live_for_account(self, account_id: str, now: dt.datetime) -> list[SessionRecord]:
        live = [r for r in self._rows.values() if r.account_id == account_id and r.live(now)]
        return sorted(live, key=lambda r: r.created_at, reverse=True)

    async def extend(self, session_id: str, expires_at: dt.datetime, now: dt.datetime) -> bool:
        record = self._rows.get(session_id)
        if record is None or not record.live(now):
            return False
        later = max(record.expires_at, min(expires_at, record.absolute_expires_at))
        self._rows[session_id] = attrs.evolve(record, expires_at=later)
        return True

    async def prove(self, session_id: str, auth_time: dt.datetime, now: dt.datetime) -> bool:
        record = self._rows.get(session_id)
        if record is None or not record.live(now):
            return False
        self._rows[session_id] = attrs.evolve(record, auth_time=max(record.auth_time, auth_time))
        return True

    async def revoke(self, account_id: str, session_id: str, now: dt.datetime) -> bool:
        record = self._rows.get(session_id)
        if record is None or record.account_id != account_id or not record.live(now):
            return False
        self._revoke([session_id], now)
        return True

    def _revoke(self, session_ids: list[str], now: dt.datetime) -> None:
        for sid in session_ids:
            self._rows[sid] = attrs.evolve(self._rows[sid], revoked_at=now)

    async def revoke_all(
        self,
        account_id: str,
        now: dt.datetime,
        *,
        keep: str | None = None,
        provider: str | None = None,
        passkey_id: str | None = None,
    ) -> list[str]:
        ended = [
            r.id
            for r in self._rows.values()
            if r.account_id == account_id
            and r.live(now)
            and r.id != keep
            and (provider is None or r.provider == provider)
            and (passkey_id is None or r.passkey_id == passkey_id)
        ]
        self._revoke(ended, now)
        return ended

    async def revoke_provider_session(
        self,
        provider: str,
        provider_session: str,
        now: dt.datetime,
        *,
        account_id: str | None = None,
    ) -> list[tuple[str, str]]:
        ended = [
            (r.account_id, r.id)
            for r in self._rows.values()
            if r.provider == provider
            and r.provider_session == provider_session
            and (account_id is None or r.account_id == account_id)
            and r.live(now)
        ]
        self._revoke([sid for _, sid in ended], now)
        return ended

    async def for_account(self, account_id: str) -> list[SessionRecord]:
        found = [r for r in self._rows.values() if r.account_id == account_id]
        return sorted(found, key=lambda r: r.created_at, reverse=True)

    def keep_while(self, owed: Callable[[str], bool]) -> None:
        """``owed(session_id)``: whether a session that expired unrevoked still has clients to
        be told (the unit of work wires the session clients in): such a record is not purged,
        as the SQL stores keep it."""
        self._owed = owed

    async def purge_expired(self, now: dt.datetime) -> int:
        owed = self._owed
        expired = [
            sid
            for sid, r in self._rows.items()
            if r.expires_at <= now and (r.revoked_at is not None or owed is None or not owed(sid))
        ]
        return self._rows.delete_where(expired)
