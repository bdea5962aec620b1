"""Server-side sign-in state: stored at initiation, taken once by the callback.

A pending sign-in is found by the provider, the state and the browser's binding hash together:
the caller may choose the state, so two browsers may use one state value, and neither can take,
replace or block the other's sign-in.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.model import PendingSignIn


class StateStoreFull(Exception):
    """The store holds as many pending sign-ins as it may; nothing was stored."""


class StateStore(Protocol):
    async def put(self, pending: PendingSignIn) -> None:
        """Store a pending sign-in, replacing one of the same browser, provider and state (the
        browser started again); :class:`StateStoreFull` when the store may hold no more."""

    async def take(
        self, provider: str, state: str, binding_hash: str | None, now: dt.datetime
    ) -> PendingSignIn | None:
        """Remove and return the unexpired pending sign-in of ``provider``, ``state`` and
        ``binding_hash``, atomically (of concurrent takes exactly one gets it); with None
        (callbacks admitted without the binding cookie) the newest of any browser."""

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop expired entries; returns how many."""
