"""In-memory adapters: for tests, and for state on a single instance."""

from .accounts import MemoryAccounts
from .events import MemoryEvents
from .state import MemoryStates

__all__ = ["MemoryAccounts", "MemoryEvents", "MemoryStates"]
