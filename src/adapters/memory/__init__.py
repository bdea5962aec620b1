"""In-memory adapters: for tests, and for state on a single instance."""

from .accounts import MemoryAccounts
from .authorization import (
    MemoryAuthorizationCodes,
    MemoryGrants,
    MemoryRefreshTokens,
    MemorySessionClients,
)
from .events import MemoryEvents
from .outbox import MemoryLogoutOutbox
from .passkeys import MemoryPasskeyChallenges, MemoryPasskeys
from .provider_tokens import MemoryProviderTokens, MemoryRevocationOutbox
from .seen_events import MemorySeenEvents
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
