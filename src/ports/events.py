"""The audit log of sign-in events."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.model import SignInEvent


class SignInEventLog(Protocol):
    async def record(self, event: SignInEvent) -> None: ...

    async def recent(self, limit: int = 100) -> list[SignInEvent]:
        """The newest events first."""

    async def for_account(self, account_id: str, limit: int = 1000) -> list[SignInEvent]:
        """The account's events, newest first."""

    async def purge_before(self, cutoff: dt.datetime) -> int:
        """Drop events older than ``cutoff``; returns how many."""
