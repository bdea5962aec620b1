"""Revocation channels: in-process (one instance), Redis pub/sub, PostgreSQL LISTEN/NOTIFY.

The Redis and PostgreSQL channels are imported on first use (PEP 562): ``redis`` and
``asyncpg`` cost start-up time and memory that a single instance never needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .local import LocalRevocations

if TYPE_CHECKING:
    from .postgres import PostgresRevocations
    from .redis import RedisRevocations

__all__ = ["LocalRevocations", "PostgresRevocations", "RedisRevocations"]

_LAZY = {"PostgresRevocations": ".postgres", "RedisRevocations": ".redis"}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_LAZY[name], __name__), name)
