"""Telling every instance that sessions were revoked, so that each drops them from the cache
that keeps verification fast (ARCHITECTURE: "sessions are JWTs with a server-side record")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

OnRevoked = Callable[[Sequence[str]], None]


class RevocationChannel(Protocol):
    async def publish(self, session_ids: Sequence[str]) -> None:
        """Tell every instance (this one included); best effort: a failure is logged, never
        raised (the cache lifetime bounds staleness)."""

    def subscribe(self, on_revoked: OnRevoked) -> None:
        """Deliver every revocation published from now on to ``on_revoked``."""

    async def start(self) -> None:
        """Connect and listen, reconnecting after a failure, until :meth:`close`."""

    async def close(self) -> None: ...
