"""Server-side sign-in state: stored at initiation, taken once by the callback."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.model import PendingSignIn


class StateExists(Exception):
    """A pending sign-in with this state value is already stored."""


class StateStore(Protocol):
    async def put(self, pending: PendingSignIn) -> None:
        """Store a pending sign-in; raises :class:`StateExists` for a state value in use."""
        ...

    async def take(self, state: str, now: dt.datetime) -> PendingSignIn | None:
        """Remove and return the pending sign-in, atomically: of concurrent takes of one state
        exactly one gets it. An expired entry is never returned (and may be dropped)."""
        ...

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop expired entries; returns how many."""
        ...
