"""Server-side sign-in state: stored at initiation, taken once by the callback.

A pending sign-in is found by three things together: the provider, the state value and the
browser that started it (the SHA-256 of its binding cookie). The state alone is a value the
caller may choose, so it cannot be the key: two browsers, or one browser with two providers,
may use one state value, and neither can take, replace or block the other's sign-in.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.model import PendingSignIn


class StateStoreFull(Exception):
    """The store holds as many pending sign-ins as it may; nothing was stored."""


class StateStore(Protocol):
    async def put(self, pending: PendingSignIn) -> None:
        """Store a pending sign-in. One from the same browser (binding hash) for the same
        provider and state value replaces it: the browser started again. Raises
        :class:`StateStoreFull` when the store may hold no more."""
        ...

    async def take(
        self, provider: str, state: str, binding_hash: str | None, now: dt.datetime
    ) -> PendingSignIn | None:
        """Remove and return the pending sign-in of ``provider`` and ``state`` started by the
        browser with ``binding_hash``, atomically: of concurrent takes exactly one gets it. Any
        other browser's pending sign-in with the same state is neither returned nor removed.

        ``binding_hash=None`` (only where the configuration admits callbacks without the
        binding cookie) takes the newest unexpired one of any browser. An expired entry is
        never returned (and may be dropped)."""
        ...

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop expired entries; returns how many."""
        ...
