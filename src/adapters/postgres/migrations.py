"""The PostgreSQL schema: ordered SQL files applied once each, and a check that none is pending.

The files are ``NNNN_name.sql`` in ``migrations/`` at the top of the source tree, shipped in the
package as ``authgate/migrations``; the ``directory`` argument or ``$AUTHGATE_MIGRATIONS_DIR``
(in that order) name another folder.

Each applied file is recorded in ``schema_migrations`` by name with the SHA-256 of its text.
``migrate`` applies the pending files in name order, each in one transaction with its record,
under a session-level advisory lock, so that concurrent runs from several hosts apply each file
once. A database where an applied file has since been edited is refused
(:class:`~.errors.MigrationEdited`): re-running it is never what an edit means.
"""

from __future__ import annotations

import hashlib
import os
import re
from importlib.resources import files
from pathlib import Path

import asyncpg

from .errors import (
    MigrationEdited,
    MigrationFailed,
    MigrationsNotFound,
    SchemaBehind,
    unavailable,
)
from .pool import ConnectionPool, Leased

CONNECT_TIMEOUT = 10.0

# pg_advisory_lock key: the first 8 bytes of sha256("authgate.migrations"), as a signed bigint.
LOCK_KEY = int.from_bytes(hashlib.sha256(b"authgate.migrations").digest()[:8], "big", signed=True)

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
    """The folder holding the SQL migrations (see the module's text)."""
    if directory is not None:
        path = Path(directory)
    elif env := os.environ.get("AUTHGATE_MIGRATIONS_DIR"):
        path = Path(env)
    else:
        path = _shipped()
    if not path.is_dir():
        raise MigrationsNotFound(
            f"migrations folder not found at {path}; "
            "set AUTHGATE_MIGRATIONS_DIR to the folder holding the NNNN_*.sql files"
        )
    return path


def _shipped() -> Path:
    """The package's ``migrations`` folder, else the source tree's (``src/adapters/postgres/``
    -> ``migrations/``); the package's is named in the error when neither exists."""
    resource = files("authgate") / "migrations"
    # A real folder unless imported from a zip, which has none to hand over.
    packaged = Path(os.fspath(resource) if isinstance(resource, os.PathLike) else str(resource))
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[3] / "migrations"
    return checkout if checkout.is_dir() else packaged


def checksum(sql: str) -> str:
    """The checksum recorded for a migration's text (SHA-256, hex)."""
    return hashlib.sha256(sql.encode()).hexdigest()


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
    """Apply the pending migrations to the database at ``url``; the names applied. Raises a
    :class:`~.errors.PostgresStoreError` (nothing is applied when a file was edited), or
    asyncpg's or OSError's own error for a connection lost midway (rerun: it resumes)."""
    files = migration_files(directory)
    texts = {path.stem: path.read_text(encoding="utf-8") for path in files}
    conn = await _connect(url)
    try:
        # A session-level lock: held across the per-file transactions, released when the
        # connection closes (below, or when it breaks), so a crashed run never leaves it held.
        await conn.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
        await conn.execute(_CREATE_LEDGER)
        done = await _applied(conn)
        _refuse_edited(files, texts, done)
        applied: list[str] = []
        for path in files:
            if path.stem in done:
                continue
            sql = texts[path.stem]
            try:
                async with conn.transaction():
                    await conn.execute(sql)  # no parameters: a multi-statement script
                    await conn.execute(
                        "INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)",
                        path.stem,
                        checksum(sql),
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


async def _applied(conn: Leased) -> dict[str, str]:
    if not await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
        return {}
    rows = await conn.fetch("SELECT name, checksum FROM schema_migrations")
    return {r["name"]: r["checksum"] for r in rows}


async def _ledger(pool_or_url: ConnectionPool | str) -> dict[str, str]:
    if isinstance(pool_or_url, str):
        conn = await _connect(pool_or_url)
        try:
            return await _applied(conn)
        finally:
            await conn.close()
    async with pool_or_url.acquire() as pooled:
        return await _applied(pooled)


def _refuse_edited(files: list[Path], texts: dict[str, str], done: dict[str, str]) -> None:
    """Raise :class:`MigrationEdited` for the first applied file whose text changed since (a
    recorded migration without a file here, applied by a newer deployment, is accepted)."""
    for path in files:
        recorded = done.get(path.stem)
        if recorded is not None and recorded != checksum(texts[path.stem]):
            raise MigrationEdited(path.name, recorded, checksum(texts[path.stem]))


async def pending_migrations(
    pool_or_url: ConnectionPool | str, directory: str | os.PathLike[str] | None = None
) -> list[str]:
    """The names of the migrations not yet applied to the database."""
    wanted = [p.stem for p in migration_files(directory)]
    done = await _ledger(pool_or_url)
    return [name for name in wanted if name not in done]


async def check_schema(
    pool_or_url: ConnectionPool | str, directory: str | os.PathLike[str] | None = None
) -> None:
    """Refuse a database this version cannot serve (:class:`MigrationEdited`, or
    :class:`SchemaBehind` when a migration is pending); one ahead of this version passes."""
    files = migration_files(directory)
    texts = {path.stem: path.read_text(encoding="utf-8") for path in files}
    done = await _ledger(pool_or_url)
    _refuse_edited(files, texts, done)
    pending = [path.stem for path in files if path.stem not in done]
    if pending:
        raise SchemaBehind(pending)
