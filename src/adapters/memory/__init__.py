"""In-memory adapters: for tests, and for state on a single instance."""

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
