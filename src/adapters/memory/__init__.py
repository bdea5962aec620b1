"""In-memory adapters: for tests, and for state on a single instance."""

from .accounts import MemoryAccounts
from .events import MemoryEvents
from .seen_events import MemorySeenEvents
from .sessions import MemorySessionRecords
from .state import MemoryStates
from .units import MemoryUnitOfWork

__all__ = [
    "MemoryAccounts",
    "MemoryEvents",
    "MemorySeenEvents",
    "MemorySessionRecords",
    "MemoryStates",
    "MemoryUnitOfWork",
]
