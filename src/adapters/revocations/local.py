"""Revocations within one process: enough for a single instance (memory or SQLite store)."""

from __future__ import annotations

from collections.abc import Sequence

from authgate.ports.revocations import OnRevoked


class LocalRevocations:
    """:class:`~authgate.ports.revocations.RevocationChannel` that reaches this process only."""

    def __init__(self) -> None:
        self._subscribers: list[OnRevoked] = []

    async def publish(self, session_ids: Sequence[str]) -> None:
        for deliver in self._subscribers:
            deliver(list(session_ids))

    def subscribe(self, on_revoked: OnRevoked) -> None:
        self._subscribers.append(on_revoked)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        self._subscribers.clear()
