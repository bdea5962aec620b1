"""In-memory adapters: for tests, and for state on a single instance. Each method runs without
an await between its reads and writes, so it is atomic on the event loop, like a transaction;
the records are immutable, so a failed unit puts back the rows it replaced (``.journal``).

Only :mod:`.state` is imported with the package, the rest on first use (PEP 562): a service on
SQLite or PostgreSQL keeps its pending sign-ins and challenges here and needs nothing else.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .state import MemoryPasskeyChallenges, MemoryStates

if TYPE_CHECKING:
    from .accounts import MemoryAccounts
    from .authorization import (
        MemoryAuthorizationCodes,
        MemoryGrants,
        MemoryRefreshTokens,
        MemorySessionClients,
    )
    from .events import MemoryEvents, MemorySeenEvents
    from .outbox import MemoryLogoutOutbox, MemoryProviderTokens, MemoryRevocationOutbox
    from .passkeys import MemoryPasskeys
    from .sessions import MemorySessionRecords
    from .units import MemoryUnitOfWork

_LAZY = {
    "MemoryAccounts": ".accounts",
    "MemoryAuthorizationCodes": ".authorization",
    "MemoryGrants": ".authorization",
    "MemoryRefreshTokens": ".authorization",
    "MemorySessionClients": ".authorization",
    "MemoryEvents": ".events",
    "MemorySeenEvents": ".events",
    "MemoryLogoutOutbox": ".outbox",
    "MemoryProviderTokens": ".outbox",
    "MemoryRevocationOutbox": ".outbox",
    "MemoryPasskeys": ".passkeys",
    "MemorySessionRecords": ".sessions",
    "MemoryUnitOfWork": ".units",
}
__all__ = [
    "MemoryAccounts",
    "MemoryAuthorizationCodes",
    "MemoryEvents",
    "MemoryGrants",
    "MemoryLogoutOutbox",
    "MemoryPasskeyChallenges",
    "MemoryPasskeys",
    "MemoryProviderTokens",
    "MemoryRefreshTokens",
    "MemoryRevocationOutbox",
    "MemorySeenEvents",
    "MemorySessionClients",
    "MemorySessionRecords",
    "MemoryStates",
    "MemoryUnitOfWork",
]


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_LAZY[name], __name__), name)
