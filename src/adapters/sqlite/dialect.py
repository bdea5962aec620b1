"""SQLite's spelling of the SQL repositories (:mod:`authgate.adapters.sql`): times as ISO
text in UTC with microseconds (which sorts and compares like the times), scopes
space-separated, other lists as JSON, no row locks (one writer at a time has the file), purges
inline."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from authgate.adapters.sql.engine import Dialect


class SqliteDialect(Dialect):
    """:class:`~authgate.adapters.sql.engine.Dialect` of SQLite (aiosqlite)."""

    def time(self, value: dt.datetime) -> object:
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).isoformat(timespec="microseconds")

    def read_time(self, value: Any) -> dt.datetime:
        return dt.datetime.fromisoformat(value)

    def scopes(self, values: Sequence[str]) -> object:
        return " ".join(values)

    def read_scopes(self, value: Any) -> list[str]:
        return str(value).split()

    def strings(self, values: Sequence[str]) -> object:
        return json.dumps(list(values))

    def read_strings(self, value: Any) -> list[str]:
        return list(json.loads(value))

    def batch_delete(self, table: str, column: str, op: str, also: str | None) -> str:
        # SQLite evaluates an uncorrelated IN sub-select once, before deleting: at most $2 rows
        # per statement, the oldest first through the column's index.
        condition = f"{column} {op} $1" if also is None else f"{column} {op} $1 AND {also}"
        return (
            f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} "  # noqa: S608
            f"WHERE {condition} ORDER BY {column} LIMIT $2)"
        )

    def claim(self, table: str, columns: Sequence[str]) -> str:
        # At most $3 rows: the IN sub-select runs once (into a transient index) before
        # updating, and one writer at a time has the file.
        return f"""
            UPDATE {table} SET leased_until = $2
            WHERE id IN (
                SELECT id FROM {table}
                WHERE next_attempt_at <= $1 AND (leased_until IS NULL OR leased_until <= $1)
                ORDER BY next_attempt_at, id LIMIT $3
            )
            RETURNING {", ".join(columns)}
            """  # noqa: S608 - the names of the outbox

    # In one statement (a write: under the file's write lock, so each is taken once).
    take_expired = (
        "DELETE FROM oauth_session_clients WHERE rowid IN (SELECT sc.rowid "
        "FROM sessions AS s JOIN oauth_session_clients AS sc ON sc.session_id = s.id "
        "WHERE s.expires_at <= $1 AND s.revoked_at IS NULL ORDER BY s.expires_at "
        "LIMIT $2) RETURNING session_id, client_id, account_id, first_at, expires_at"
    )

    def is_unique_violation(self, error: BaseException) -> bool:
        text = str(error)
        return isinstance(error, sqlite3.IntegrityError) and (
            "UNIQUE" in text or "PRIMARY KEY" in text
        )

    def is_foreign_key_violation(self, error: BaseException) -> bool:
        return isinstance(error, sqlite3.IntegrityError) and "FOREIGN KEY" in str(error)

    def is_identity_race(self, error: BaseException) -> bool:
        return self.is_unique_violation(error) and "identities." in str(error)


SQLITE = SqliteDialect()
"""The dialect's one instance."""
