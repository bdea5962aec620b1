"""PostgreSQL's spelling of the SQL repositories (:mod:`authgate.adapters.sql`): times as
``timestamptz``, lists as ``text[]``, account ids as ``uuid``, row locks, and the statements
that do in one round trip what takes SQLite several (a refresh token's rotation, a grant's
upsert): the fast paths the PostgreSQL statement counts rely on."""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Sequence
from typing import Any

import asyncpg

from authgate.adapters.sql.authorization import GRANT_COLUMNS, REFRESH_COLUMNS
from authgate.adapters.sql.engine import Dialect

IDENTITY_KEY = "identities_pkey"  # what a second insert of an identity violates


# uuid.UUID parses in Python (~2 µs); a caller sends the same account id on every request
# (docs/benchmarks.md). UUIDs are immutable; failures are not cached.
@functools.lru_cache(maxsize=4096)
def _parsed_uuid(account_id: str) -> uuid.UUID:
    return uuid.UUID(account_id)


class PostgresDialect(Dialect):
    """:class:`~authgate.adapters.sql.engine.Dialect` of PostgreSQL (asyncpg)."""

    rowid = "ctid"
    greatest = "GREATEST"
    least = "LEAST"
    purge_inline = False  # in the background, on the pool

    def time(self, value: dt.datetime) -> object:
        # An aware datetime; a naive one is taken as UTC (timestamptz would read it as UTC).
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)

    def read_time(self, value: Any) -> dt.datetime:
        return value  # type: ignore[no-any-return]

    def account_key(self, account_id: str) -> object | None:
        try:
            return _parsed_uuid(account_id)
        except (ValueError, TypeError, AttributeError):
            return None

    def scopes(self, values: Sequence[str]) -> object:
        return list(values)

    def read_scopes(self, value: Any) -> list[str]:
        return value  # type: ignore[no-any-return]

    strings = scopes
    read_strings = read_scopes

    def lock(self, clause: str) -> str:
        return f" FOR {clause}"

    def batch_delete(self, table: str, column: str, condition: str) -> str:
        # The inner select runs once per statement (an uncorrelated ARRAY(…) is computed before
        # the DELETE scans anything), so one statement deletes at most $2 rows, the oldest first
        # through the column's index, found again by their row address. The condition is repeated
        # outside: a row changed by another transaction since the select (a pending sign-in
        # replaced by its browser) is checked again in its new version and stays unless still
        # expired. No row lock up front: it doubled the statement's cost, and a purge meeting
        # another purge's rows waits for that statement's few milliseconds and finds them gone.
        return (
            f"DELETE FROM {table} WHERE ctid = ANY(ARRAY("  # noqa: S608 - names of the package
            f"SELECT ctid FROM {table} WHERE {condition} ORDER BY {column} LIMIT $2"
            f")) AND {condition}"
        )

    def claim(self, table: str, columns: Sequence[str]) -> str:
        # Bounded by construction, whatever the plan: a MATERIALIZED WITH query runs once per
        # statement and its rows are kept; a plan that re-scans it (a nested loop re-scans its
        # inner side for every outer row) re-reads those rows. A sub-select in FROM or IN is re-run
        # instead, and each re-run skips the rows this statement has already updated and locks the
        # next ones: a claim of 2 leased 5. So at most $3 distinct ids, each matching one row by
        # the primary key. MATERIALIZED, as a single-use WITH query may otherwise be folded into
        # the statement as that very sub-select.
        returned = ", ".join(f"r.{c}" for c in columns)
        return f"""
            WITH due AS MATERIALIZED (
                SELECT id FROM {table}
                WHERE next_attempt_at <= $1 AND (leased_until IS NULL OR leased_until <= $1)
                ORDER BY next_attempt_at, id LIMIT $3
                FOR UPDATE SKIP LOCKED
            )
            UPDATE {table} AS r SET leased_until = $2
            FROM due
            WHERE r.id = due.id
            RETURNING {returned}
            """  # noqa: S608 - the names of the outbox

    # The sessions' expiry index finds the candidates; the rows taken are locked and skipped
    # by a concurrent sweep (another instance), and a row another sweep deleted first is
    # simply not returned: each is taken once.
    take_expired = (
        "WITH due AS (SELECT sc.session_id, sc.client_id FROM sessions AS s "
        "JOIN oauth_session_clients AS sc ON sc.session_id = s.id "
        "WHERE s.expires_at <= $1 AND s.revoked_at IS NULL "
        "ORDER BY s.expires_at LIMIT $2 FOR UPDATE OF sc SKIP LOCKED) "
        "DELETE FROM oauth_session_clients AS sc USING due "
        "WHERE sc.session_id = due.session_id AND sc.client_id = due.client_id "
        "RETURNING sc.session_id, sc.client_id, sc.account_id, sc.first_at, sc.expires_at"
    )

    # One statement, atomic by itself: the presented token is marked replaced only while it
    # is current and its family live, the family's expiry moves to the new token's, and the
    # new token is inserted only when the first part matched (its rows feed the others). Of
    # two concurrent rotations of one token, the second waits for the first's row lock, then
    # finds the token replaced and matches nothing. A revocation of the family committing
    # meanwhile leaves the new token dead all the same: a token is usable only while its
    # family is.
    rotate = f"""
        WITH old AS (
            UPDATE oauth_refresh_tokens AS t SET replaced_at = $3
            FROM oauth_token_families AS f
            WHERE t.token_hash = $1 AND f.family_id = t.family_id
                AND t.family_id = $2 AND t.client_id = $5 AND t.account_id = $6
                AND t.session_id = $7
                AND t.replaced_at IS NULL AND t.expires_at > $3 AND f.revoked_at IS NULL
            RETURNING {REFRESH_COLUMNS}
        ), family AS (
            UPDATE oauth_token_families SET expires_at = GREATEST(expires_at, $11)
            WHERE family_id IN (SELECT family_id FROM old)
        ), new AS (
            INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, account_id,
                session_id, scopes, auth_time, created_at, expires_at)
            SELECT $4::text, $2, $5, $6, $7, $8::text[], $9::timestamptz, $10::timestamptz, $11
            FROM old
        )
        SELECT * FROM old
    """  # noqa: S608 - constant columns

    # A grant's upsert that unions the scopes in the row it conflicts with.
    grant_put = f"""
        INSERT INTO oauth_grants ({GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (account_id, client_id) DO UPDATE SET
            scopes = ARRAY(
                SELECT DISTINCT s FROM unnest(oauth_grants.scopes || EXCLUDED.scopes) AS s
                ORDER BY s
            ),
            granted_at = EXCLUDED.granted_at,
            last_used_at = GREATEST(oauth_grants.last_used_at, EXCLUDED.last_used_at)
        RETURNING {GRANT_COLUMNS}
    """  # noqa: S608 - constant columns
    grant_consent_first = f"""
        INSERT INTO oauth_grants ({GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (account_id, client_id) DO NOTHING
        RETURNING {GRANT_COLUMNS}
    """  # noqa: S608 - constant columns
    grant_consent_again = f"""
        UPDATE oauth_grants SET
            scopes = ARRAY(SELECT DISTINCT s FROM unnest(scopes || $3::text[]) AS s ORDER BY s),
            granted_at = $4,
            last_used_at = GREATEST(last_used_at, $5)
        WHERE account_id = $1 AND client_id = $2 AND granted_at = $6
        RETURNING {GRANT_COLUMNS}
    """  # noqa: S608 - constant columns

    def is_unique_violation(self, error: BaseException) -> bool:
        return isinstance(error, asyncpg.UniqueViolationError)

    def is_foreign_key_violation(self, error: BaseException) -> bool:
        return isinstance(error, asyncpg.ForeignKeyViolationError)

    def is_identity_race(self, error: BaseException) -> bool:
        return (
            isinstance(error, asyncpg.UniqueViolationError)
            and error.constraint_name == IDENTITY_KEY
        )


POSTGRES = PostgresDialect()
"""The dialect's one instance."""
