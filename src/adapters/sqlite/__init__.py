"""SQLite adapters (aiosqlite): the embedded default store, one file, no server.

Entry point: :func:`open_sqlite`, which creates the file and applies its schema on open.
"""

from .accounts import SqliteAccounts
from .events import SqliteEvents
from .schema import SchemaTooNew
from .state import SqliteStates
from .store import SqliteStore, SqliteUnavailable, open_sqlite

__all__ = [
    "SchemaTooNew",
    "SqliteAccounts",
    "SqliteEvents",
    "SqliteStates",
    "SqliteStore",
    "SqliteUnavailable",
    "open_sqlite",
]
