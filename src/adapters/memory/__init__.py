"""In-memory adapters: for tests, and for state on a single instance. Each method runs without
an await between its reads and writes, so it is atomic on the event loop, like a transaction;
the records are immutable, so a failed unit puts back the rows it replaced (``.journal``)."""

from .accounts import MemoryAccounts
from .authorization import (
    MemoryAuthorizationCodes,
    MemoryGrants,
    MemoryRefreshTokens,
    MemorySessionClients,
)
from .events import MemoryEvents, MemorySeenEvents
from .outbox import MemoryLogoutOutbox, MemoryProviderTokens, MemoryRevocationOutbox
from .passkeys import MemoryPasskeyChallenges, MemoryPasskeys
from .sessions import MemorySessionRecords
from .state import MemoryStates
from .units import MemoryUnitOfWork

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
