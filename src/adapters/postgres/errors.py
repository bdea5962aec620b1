"""The failures of the PostgreSQL store an operator sees: one line each, never a password.

Catch :class:`PostgresStoreError` at start-up and in ``authgate migrate``. Failures of single
operations while serving (a lost connection, a timeout) are asyncpg's and OSError's own.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

MIGRATE_COMMAND = "authgate migrate --config FILE"


class PostgresStoreError(Exception):
    """Base of the store's start-up and migration failures."""


class DatabaseUnavailable(PostgresStoreError, ConnectionError):
    """The server cannot be reached or refused the connection (also a ConnectionError)."""


class MigrationsNotFound(PostgresStoreError):
    """The folder of SQL migrations cannot be found or holds unexpected files."""


class MigrationFailed(PostgresStoreError):
    """A migration file failed; it was rolled back whole (the cause is chained)."""


class SchemaBehind(PostgresStoreError):
    """The database lacks migrations this version of the service needs."""

    def __init__(self, pending: list[str]) -> None:
        self.pending = pending
        super().__init__(
            f"the database schema is behind: {len(pending)} pending migration(s) "
            f"({', '.join(pending)}); run `{MIGRATE_COMMAND}` first"
        )


def unavailable(url: str, error: BaseException) -> DatabaseUnavailable:
    """The DatabaseUnavailable for a failed connection to ``url``."""
    text = str(error).strip()
    reason = text.splitlines()[0] if text else type(error).__name__
    return DatabaseUnavailable(f"cannot connect to PostgreSQL at {redact(url)}: {reason}")


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username}:***@{host}" if parts.username else f"***@{host}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
