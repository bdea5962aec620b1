"""PostgreSQL (asyncpg): the production store, the SQL repositories (:mod:`authgate.adapters.sql`)
on a pool of its own; :func:`open_postgres`, :func:`migrate` and :func:`check_schema`.

Only :mod:`.errors` (no asyncpg) is imported with the package, the rest on first use (PEP 562):
a deployment on SQLite names :func:`redact` without loading asyncpg.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .errors import (
    DatabaseUnavailable,
    MigrationEdited,
    MigrationFailed,
    MigrationsNotFound,
    PostgresStoreError,
    SchemaBehind,
    redact,
)

if TYPE_CHECKING:
    from .migrations import check_schema, migrate
    from .store import PostgresStore, open_postgres

__all__ = [
    "DatabaseUnavailable",
    "MigrationEdited",
    "MigrationFailed",
    "MigrationsNotFound",
    "PostgresStore",
    "PostgresStoreError",
    "SchemaBehind",
    "check_schema",
    "migrate",
    "open_postgres",
    "redact",
]

_LAZY = {
    "PostgresStore": ".store",
    "open_postgres": ".store",
    "check_schema": ".migrations",
    "migrate": ".migrations",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_LAZY[name], __name__), name)
