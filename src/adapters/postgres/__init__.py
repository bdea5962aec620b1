"""PostgreSQL adapters (asyncpg): the production store of accounts, state and sign-in events.

Entry points: :func:`open_postgres` (the adapters on one pool), :func:`migrate` and
:func:`check_schema` (the schema in ``migrations/``).
"""

from .accounts import PostgresAccounts
from .events import PostgresEvents
from .migrations import MigrationsNotFound, SchemaBehind, check_schema, migrate
from .state import PostgresStates
from .store import DatabaseUnavailable, PostgresStore, open_postgres

__all__ = [
    "DatabaseUnavailable",
    "MigrationsNotFound",
    "PostgresAccounts",
    "PostgresEvents",
    "PostgresStates",
    "PostgresStore",
    "SchemaBehind",
    "check_schema",
    "migrate",
    "open_postgres",
]
