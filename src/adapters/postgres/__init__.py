"""PostgreSQL adapters (asyncpg): the production store of accounts, state and sign-in events.

Entry points: :func:`open_postgres` (the adapters on one pool), :func:`migrate` and
:func:`check_schema` (the schema in the package's ``migrations/`` folder).
"""

from .accounts import PostgresAccounts
from .errors import (
    DatabaseUnavailable,
    MigrationEdited,
    MigrationFailed,
    MigrationsNotFound,
    PostgresStoreError,
    SchemaBehind,
    redact,
)
from .events import PostgresEvents
from .migrations import check_schema, migrate
from .state import PostgresStates
from .store import PostgresStore, open_postgres

__all__ = [
    "DatabaseUnavailable",
    "MigrationEdited",
    "MigrationFailed",
    "MigrationsNotFound",
    "PostgresAccounts",
    "PostgresEvents",
    "PostgresStates",
    "PostgresStore",
    "PostgresStoreError",
    "SchemaBehind",
    "check_schema",
    "migrate",
    "open_postgres",
    "redact",
]
