"""The device authorizations of the OpenID Provider (RFC 8628): each found by the digest of
its device code (the device's polls) or of its user code (the person's page). Every method is
atomic on its own; those of one unit of work commit together. Deleting an account deletes
the authorizations it approved or denied."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.openid.device import DeviceAuthorization


class DeviceAuthorizations(Protocol):
    async def add(self, authorization: DeviceAuthorization) -> None:
        """Keep a new, pending authorization (its device code's digest is new; the caller
        draws a user code no pending authorization holds)."""

    async def pending(self, user_code_hash: str, now: dt.datetime) -> DeviceAuthorization | None:
        """The authorization of the user code, while it is pending and not expired at
        ``now``; else None."""

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
        """Approve or deny the authorization of the user code, atomically, only while it is
        pending and not expired at ``now``: the authorization as decided, or None (decided
        already, expired or unknown)."""

    async def polling(self, device_code_hash: str) -> DeviceAuthorization | None:
        """The authorization of the device code, locked for the rest of the unit of work (a
        concurrent poll waits), whatever its status; None when unknown."""

    async def polled(self, device_code_hash: str, now: dt.datetime, interval: int) -> None:
        """Record a poll at ``now`` and the interval the device must now keep."""

    async def use(self, device_code_hash: str, now: dt.datetime) -> DeviceAuthorization | None:
        """Mark the approved, unexpired authorization used, atomically: the first call gets
        it, every later one None (tokens are issued once)."""

    async def purge_expired(self, now: dt.datetime) -> int:
        """Delete the authorizations expired at ``now``; how many."""
