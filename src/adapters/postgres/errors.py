"""The failures of the PostgreSQL store an operator sees: one line each, never a credential.

Catch :class:`PostgresStoreError` at start-up and in ``authgate migrate``. Failures of single
operations while serving (a lost connection, a timeout) are asyncpg's and OSError's own.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus, urlsplit, urlunsplit

MIGRATE_COMMAND = "authgate migrate --config FILE"


class PostgresStoreError(Exception):
    """Base of the store's start-up and migration failures."""


class DatabaseUnavailable(PostgresStoreError, ConnectionError):
    """The server cannot be reached or refused the connection (also a ConnectionError)."""


class MigrationsNotFound(PostgresStoreError):
    """The folder of SQL migrations cannot be found or holds unexpected files."""


class MigrationFailed(PostgresStoreError):
    """A migration file failed; it was rolled back whole (the cause is chained)."""


class MigrationEdited(PostgresStoreError):
    """A migration file differs from the text applied to the database: applied migrations are
    history, a change goes in a new file."""

    def __init__(self, file_name: str, recorded: str, actual: str) -> None:
        self.file_name = file_name
        self.recorded = recorded
        self.actual = actual
        super().__init__(
            f"migration {file_name} was edited after it was applied (sha256 recorded "
            f"{recorded[:12]}, file {actual[:12]}); restore the applied text and put the "
            "change in a new migration"
        )


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


# Query parameters that carry a credential (libpq's password, sslpassword; anything named like
# a secret): their values are hidden wherever the URL is shown.
_SECRET_KEY = re.compile("password|secret|token", re.IGNORECASE)
HIDDEN = "***"


def redact(url: str) -> str:
    """The URL with every credential hidden, for messages and logs: the user-info password
    (``user:***@host``) and the values of query parameters named like a secret
    (``?sslpassword=***``). Never raises: a URL too malformed to take apart shows its scheme."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced IPv6 bracket: no telling where a password ends
        scheme = url.split("://", 1)[0] if "://" in url else "?"
        return f"{scheme}://{HIDDEN} (malformed URL)"
    # The netloc as text, not parts.port/hostname: those raise on a malformed port, and a
    # multi-host netloc (h1:5432,h2:5432) has no single host.
    userinfo, at, hosts = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:{HIDDEN}@{hosts}"
    query = "&".join(_redact_pair(pair) for pair in parts.query.split("&"))
    fragment = HIDDEN if parts.fragment else ""
    if parts.scheme and not netloc and url.startswith(f"{parts.scheme}://"):
        # An empty authority, as written: urlunsplit drops it for a scheme it does not know
        # (sqlite:///./x.db would read sqlite:/./x.db).
        shown = f"{parts.scheme}://{parts.path}"
        return shown + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")
    return urlunsplit(parts._replace(netloc=netloc, query=query, fragment=fragment))


def _redact_pair(pair: str) -> str:
    key, eq, _ = pair.partition("=")
    if eq and _SECRET_KEY.search(unquote_plus(key)):
        return f"{key}={HIDDEN}"
    return pair
