"""SQLite (aiosqlite): the embedded default store, one file, no server, the SQL repositories
(:mod:`authgate.adapters.sql`) on its one connection.

Entry point: :func:`open_sqlite`, which creates the file and applies its schema on open.
"""

from .schema import SchemaTooNew
from .store import SqliteStore, SqliteUnavailable, open_sqlite

__all__ = [
    "SchemaTooNew",
    "SqliteStore",
    "SqliteUnavailable",
    "open_sqlite",
]
