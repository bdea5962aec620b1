"""The server-side record of every session the service issues (by session id, never the
token), so that a session can be listed and ended before its token expires."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.model import SessionRecord


class SessionRecords(Protocol):
    """Every method is atomic on its own (one statement or transaction in SQL adapters)."""

    async def add(self, record: SessionRecord) -> None:
        """Record a newly issued session (its id is new)."""

    async def get(self, session_id: str, *, for_change: bool = False) -> SessionRecord | None:
        """The record, revoked or not; None for an unknown id. ``for_change``: the unit of work
        changes something that holds only while this session lives (a link it started), so
        the record stays locked until the unit ends and a revocation meanwhile waits."""

    async def is_live(self, session_id: str, now: dt.datetime) -> bool:
        """Whether the session exists, unrevoked and unexpired: the check on every
        authenticated request (one indexed read)."""

    async def live_for_account(self, account_id: str, now: dt.datetime) -> list[SessionRecord]:
        """The account's live sessions, newest first."""

    async def extend(self, session_id: str, expires_at: dt.datetime, now: dt.datetime) -> bool:
        """A renewed token's expiry (never past ``absolute_expires_at``, never moved back);
        False when the session is not live."""

    async def prove(self, session_id: str, auth_time: dt.datetime, now: dt.datetime) -> bool:
        """A newer proof of login (a link or re-authentication) moves a live session's
        ``auth_time`` later; False when the session is not live."""

    async def revoke(self, account_id: str, session_id: str, now: dt.datetime) -> bool:
        """End one of the account's sessions; False when it has no such live session."""

    async def revoke_all(
        self,
        account_id: str,
        now: dt.datetime,
        *,
        keep: str | None = None,
        provider: str | None = None,
        passkey_id: str | None = None,
    ) -> list[str]:
        """End the account's live sessions, but ``keep``, only those of ``provider`` or
        ``passkey_id`` when given; the ids ended."""

    async def revoke_provider_session(
        self,
        provider: str,
        provider_session: str,
        now: dt.datetime,
        *,
        account_id: str | None = None,
    ) -> list[tuple[str, str]]:
        """Back-channel logout: end the live sessions of ``provider`` with that provider
        ``sid`` (only the account's when given); the (account id, session id) pairs ended."""

    async def for_account(self, account_id: str) -> list[SessionRecord]:
        """Every record of the account, newest first (the data-protection export)."""

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop records whose sessions expired (revoked ones too, once expired)."""
