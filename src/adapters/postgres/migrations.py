"""The PostgreSQL schema: ordered SQL files applied once each, and a check that none is pending.

The files are ``migrations/NNNN_name.sql`` at the root of the source tree. They are found, in
this order, at the ``directory`` argument, at ``$AUTHGATE_MIGRATIONS_DIR``, or beside ``src/``
(``Path(__file__).parents[3] / "migrations"``, which holds for a source checkout and for the
editable install made by ``scripts/bootstrap``). A non-editable install does not ship them: set
``AUTHGATE_MIGRATIONS_DIR`` to a copy of the folder. A missing folder is a clear error.

Each applied file is recorded by name (without ``.sql``) in ``schema_migrations``. ``migrate``
applies the pending files in name order, each in its own transaction together with its record,
while holding a session-level advisory lock, so that runs started at once from several hosts
apply every file exactly once (the later runs wait, then find nothing to do).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import asyncpg

from .errors import MigrationFailed, MigrationsNotFound, SchemaBehind, unavailable

CONNECT_TIMEOUT = 10.0

# pg_advisory_lock key: the first 8 bytes of sha256("authgate.migrations"), as a signed bigint.
LOCK_KEY = int.from_bytes(hashlib.sha256(b"authgate.migrations").digest()[:8], "big", signed=True)

_Connection = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy

_FILE_NAME = re.compile(r"^(\d{4})_[A-Za-z0-9_]+\.sql$")

_CREATE_LEDGER = """
    CREATE TABLE IF NOT EXISTS schema_migrations (
        name       text PRIMARY KEY,
        checksum   text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
    )
"""


# What a failed connection attempt raises (refused, timed out, rejected by the server, a URL
# asyncpg cannot parse: ValueError, whose text never quotes the password).
CONNECT_ERRORS = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, ValueError)


async def _connect(url: str) -> asyncpg.Connection:
    try:
        return await asyncpg.connect(url, timeout=CONNECT_TIMEOUT)
    except CONNECT_ERRORS as e:
        raise unavailable(url, e) from e


def migrations_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the SQL migrations (see the module docstring for the search order)."""
    if directory is not None:
        path = Path(directory)
    elif env := os.environ.get("AUTHGATE_MIGRATIONS_DIR"):
        path = Path(env)
    else:
        path = Path(__file__).resolve().parents[3] / "migrations"
    if not path.is_dir():
        raise MigrationsNotFound(
            f"migrations folder not found at {path}; "
            "set AUTHGATE_MIGRATIONS_DIR to the folder holding the NNNN_*.sql files"
        )
    return path


def migration_files(directory: str | os.PathLike[str] | None = None) -> list[Path]:
    """The migration files in the order they apply."""
    folder = migrations_dir(directory)
    files = sorted(p for p in folder.iterdir() if p.suffix == ".sql")
    bad = [p.name for p in files if not _FILE_NAME.match(p.name)]
    if bad:
        raise MigrationsNotFound(f"unexpected migration file name(s) in {folder}: {bad}")
    if not files:
        raise MigrationsNotFound(f"no migrations (NNNN_*.sql) in {folder}")
    return files


async def migrate(url: str, directory: str | os.PathLike[str] | None = None) -> list[str]:
    """Apply the pending migrations to the database at ``url``; returns the names applied
    (empty when the schema is current). Safe to run concurrently from several hosts.

    Raises :class:`~.errors.DatabaseUnavailable`, :class:`~.errors.MigrationsNotFound` or
    :class:`~.errors.MigrationFailed` (all :class:`~.errors.PostgresStoreError`); a
    connection lost midway raises asyncpg's or OSError's own error (rerun: it resumes).
    """
    files = migration_files(directory)
    conn = await _connect(url)
    try:
        # A session-level lock: held across the per-file transactions, released when the
        # connection closes (below, or when it breaks), so a crashed run never leaves it held.
        await conn.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
        await conn.execute(_CREATE_LEDGER)
        done = await _applied(conn)
        applied: list[str] = []
        for path in files:
            if path.stem in done:
                continue
            sql = path.read_text(encoding="utf-8")
            try:
                async with conn.transaction():
                    await conn.execute(sql)  # no parameters: a multi-statement script
                    await conn.execute(
                        "INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)",
                        path.stem,
                        hashlib.sha256(sql.encode()).hexdigest(),
                    )
            except asyncpg.PostgresError as e:
                first_line = str(e).strip().splitlines()[0] if str(e).strip() else ""
                raise MigrationFailed(
                    f"migration {path.name} failed and was rolled back: "
                    f"{type(e).__name__}: {first_line}"
                ) from e
            applied.append(path.stem)
        return applied
    finally:
        await conn.close()


async def _applied(conn: _Connection) -> set[str]:
    if not await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
        return set()
    return {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}


async def pending_migrations(
    pool_or_url: asyncpg.Pool | str, directory: str | os.PathLike[str] | None = None
) -> list[str]:
    """The names of the migrations not yet applied to the database."""
    wanted = [p.stem for p in migration_files(directory)]
    if isinstance(pool_or_url, str):
        conn = await _connect(pool_or_url)
        try:
            done = await _applied(conn)
        finally:
            await conn.close()
    else:
        async with pool_or_url.acquire() as pooled:
            done = await _applied(pooled)
    return [name for name in wanted if name not in done]


async def check_schema(
    pool_or_url: asyncpg.Pool | str, directory: str | os.PathLike[str] | None = None
) -> None:
    """Raise :class:`SchemaBehind` (naming ``authgate migrate --config FILE``) when a migration
    is pending. A database ahead of this version (a newer deployment migrated it) passes."""
    pending = await pending_migrations(pool_or_url, directory)
    if pending:
        raise SchemaBehind(pending)
