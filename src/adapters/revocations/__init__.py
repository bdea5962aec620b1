"""Revocation channels: in-process (one instance), Redis pub/sub, PostgreSQL LISTEN/NOTIFY.

The Redis and PostgreSQL channels are imported on first use (PEP 562): ``redis`` and
``asyncpg`` cost start-up time and memory that a single instance never needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING

from authgate.ports.revocations import OnRevoked

if TYPE_CHECKING:
    from .postgres import PostgresRevocations
    from .redis import RedisRevocations

__all__ = ["LocalRevocations", "PostgresRevocations", "RedisRevocations"]

_LAZY = {"PostgresRevocations": ".postgres", "RedisRevocations": ".redis"}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_LAZY[name], __name__), name)


class LocalRevocations:
    """:class:`~authgate.ports.revocations.RevocationChannel` that reaches this process only:
    enough for a single instance (memory or SQLite store)."""

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
