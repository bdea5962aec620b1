"""Provider tokens (sealed) and the revocation outbox in PostgreSQL, shared by every instance."""

from __future__ import annotations

import datetime as dt

import asyncpg

from authgate.domain.model import (
    PendingRevocation,
    ProviderIdentity,
    SealedToken,
    StoredProviderToken,
)

from . import rows

_SELECT_TOKENS = (
    "SELECT account_id, provider, subject, key_id, ciphertext, updated_at FROM provider_tokens "
)
_INSERT_PENDING = (
    "INSERT INTO provider_token_revocations (id, account_id, provider, subject, key_id, "
    "ciphertext, created_at, next_attempt_at, attempts) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
)
_SELECT_PENDING = (
    "SELECT id, account_id, provider, subject, key_id, ciphertext, created_at, "
    "next_attempt_at, attempts "
    "FROM provider_token_revocations "
)


def _stored(r: asyncpg.Record) -> StoredProviderToken:
    return StoredProviderToken(
        account_id=r["account_id"],
        identity=ProviderIdentity(r["provider"], r["subject"]),
        sealed=SealedToken(r["key_id"], r["ciphertext"]),
        updated_at=r["updated_at"],
    )


def _pending(r: asyncpg.Record) -> PendingRevocation:
    return PendingRevocation(
        id=r["id"],
        account_id=r["account_id"],
        identity=ProviderIdentity(r["provider"], r["subject"]),
        sealed=SealedToken(r["key_id"], r["ciphertext"]),
        created_at=r["created_at"],
        next_attempt_at=r["next_attempt_at"],
        attempts=r["attempts"],
    )


class PostgresProviderTokens:
    """:class:`~authgate.ports.provider_tokens.ProviderTokenStore` on a pool, or on one
    connection of a unit of work (:meth:`bound`)."""

    def __init__(self, db: rows.Executor) -> None:
        self._db = db

    def bound(self, conn: rows.Executor) -> PostgresProviderTokens:
        bound = rows.shallow_copy(self)
        bound._db = conn
        return bound

    async def put(self, stored: StoredProviderToken) -> None:
        # In a sign-in's unit of work it is sent with the unit's other writes (.unit).
        await rows.write(
            self._db,
            """
            INSERT INTO provider_tokens (account_id, provider, subject, key_id, ciphertext,
                updated_at)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (account_id, provider) DO UPDATE SET subject = EXCLUDED.subject,
                key_id = EXCLUDED.key_id, ciphertext = EXCLUDED.ciphertext,
                updated_at = EXCLUDED.updated_at
            """,
            stored.account_id,
            stored.identity.provider,
            stored.identity.subject,
            stored.sealed.key_id,
            stored.sealed.ciphertext,
            rows.utc(stored.updated_at),
        )

    async def take(self, account_id: str, provider: str | None = None) -> list[StoredProviderToken]:
        found = await self._db.fetch(
            "DELETE FROM provider_tokens WHERE account_id = $1 "
            "AND ($2::text IS NULL OR provider = $2) "
            "RETURNING account_id, provider, subject, key_id, ciphertext, updated_at",
            account_id,
            provider,
        )
        return sorted((_stored(r) for r in found), key=lambda t: t.identity.provider)

    async def for_account(self, account_id: str) -> list[StoredProviderToken]:
        found = await self._db.fetch(
            _SELECT_TOKENS + "WHERE account_id = $1 ORDER BY provider", account_id
        )
        return [_stored(r) for r in found]

    async def sealed_under_other_keys(self, key_id: str, limit: int) -> list[StoredProviderToken]:
        found = await self._db.fetch(
            _SELECT_TOKENS + "WHERE key_id <> $1 ORDER BY account_id, provider LIMIT $2",
            key_id,
            limit,
        )
        return [_stored(r) for r in found]

    async def replace_sealed(self, stored: StoredProviderToken, old_key_id: str) -> bool:
        status = await self._db.execute(
            "UPDATE provider_tokens SET key_id = $1, ciphertext = $2 "
            "WHERE account_id = $3 AND provider = $4 AND key_id = $5",
            stored.sealed.key_id,
            stored.sealed.ciphertext,
            stored.account_id,
            stored.identity.provider,
            old_key_id,
        )
        return rows.affected(status) == 1


class PostgresRevocationOutbox:
    """:class:`~authgate.ports.provider_tokens.RevocationOutbox` on a pool, or on one
    connection of a unit of work: a claim locks at most ``limit`` due rows ``FOR UPDATE SKIP
    LOCKED`` and leases them in one statement, so concurrent instances claim disjoint rows."""

    def __init__(self, db: rows.Executor) -> None:
        self._db = db

    def bound(self, conn: rows.Executor) -> PostgresRevocationOutbox:
        bound = rows.shallow_copy(self)
        bound._db = conn
        return bound

    async def add(self, pending: PendingRevocation) -> None:
        await self._db.execute(
            _INSERT_PENDING,
            pending.id,
            pending.account_id,
            pending.identity.provider,
            pending.identity.subject,
            pending.sealed.key_id,
            pending.sealed.ciphertext,
            rows.utc(pending.created_at),
            rows.utc(pending.next_attempt_at),
            pending.attempts,
        )

    async def claim(
        self, now: dt.datetime, lease: dt.timedelta, limit: int
    ) -> list[PendingRevocation]:
        # Bounded by construction, whatever the plan: a MATERIALIZED WITH query runs once per
        # statement and its rows are kept; a plan that re-scans it (a nested loop re-scans
        # its inner side for every outer row) re-reads those rows. A sub-select in FROM or
        # IN is re-run instead, and each re-run skips the rows this statement has already
        # updated and locks the next ones: a claim of 2 leased 5. So at most $3 distinct ids,
        # each matching one row by the primary key. MATERIALIZED, as a single-use WITH query
        # may otherwise be folded into the statement as that very sub-select.
        found = await self._db.fetch(
            """
            WITH due AS MATERIALIZED (
                SELECT id FROM provider_token_revocations
                WHERE next_attempt_at <= $1 AND (leased_until IS NULL OR leased_until <= $1)
                ORDER BY next_attempt_at, id LIMIT $3
                FOR UPDATE SKIP LOCKED
            )
            UPDATE provider_token_revocations AS r SET leased_until = $2
            FROM due
            WHERE r.id = due.id
            RETURNING r.id, r.account_id, r.provider, r.subject, r.key_id, r.ciphertext,
                r.created_at, r.next_attempt_at, r.attempts
            """,
            rows.utc(now),
            rows.utc(now + lease),
            limit,
        )
        return sorted((_pending(r) for r in found), key=lambda p: (p.next_attempt_at, p.id))

    async def complete(self, revocation_id: str) -> None:
        await self._db.execute(
            "DELETE FROM provider_token_revocations WHERE id = $1", revocation_id
        )

    async def retry(
        self, revocation_id: str, attempts: int, next_attempt_at: dt.datetime, error: str
    ) -> None:
        await self._db.execute(
            "UPDATE provider_token_revocations SET attempts = $1, next_attempt_at = $2, "
            "leased_until = NULL, last_error = $3 WHERE id = $4",
            attempts,
            rows.utc(next_attempt_at),
            error,
            revocation_id,
        )

    async def pending(self) -> list[PendingRevocation]:
        found = await self._db.fetch(_SELECT_PENDING + "ORDER BY created_at, id")
        return [_pending(r) for r in found]
