"""Provider tokens (sealed) and the revocation outbox in SQLite."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from authgate.domain.model import (
    PendingRevocation,
    ProviderIdentity,
    SealedToken,
    StoredProviderToken,
)

from .db import Database, parse_ts, ts
from .outbox import SqliteOutbox

_SELECT_TOKENS = (
    "SELECT account_id, provider, subject, key_id, ciphertext, updated_at FROM provider_tokens "
)


def _stored(r: Sequence[Any]) -> StoredProviderToken:
    return StoredProviderToken(
        account_id=r[0],
        identity=ProviderIdentity(r[1], r[2]),
        sealed=SealedToken(r[3], r[4]),
        updated_at=parse_ts(r[5]),
    )


class SqliteProviderTokens:
    """:class:`~authgate.ports.provider_tokens.ProviderTokenStore` in a SQLite file."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def put(self, stored: StoredProviderToken) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                """
                INSERT INTO provider_tokens (account_id, provider, subject, key_id, ciphertext,
                    updated_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (account_id, provider) DO UPDATE SET subject = excluded.subject,
                    key_id = excluded.key_id, ciphertext = excluded.ciphertext,
                    updated_at = excluded.updated_at
                """,
                (
                    stored.account_id,
                    stored.identity.provider,
                    stored.identity.subject,
                    stored.sealed.key_id,
                    stored.sealed.ciphertext,
                    ts(stored.updated_at),
                ),
            )

    async def take(self, account_id: str, provider: str | None = None) -> list[StoredProviderToken]:
        async with self._db.transaction() as conn:
            rows = await conn.execute_fetchall(
                "DELETE FROM provider_tokens WHERE account_id = ? AND (? IS NULL OR provider = ?) "
                "RETURNING account_id, provider, subject, key_id, ciphertext, updated_at",
                (account_id, provider, provider),
            )
        return sorted((_stored(r) for r in rows), key=lambda t: t.identity.provider)

    async def for_account(self, account_id: str) -> list[StoredProviderToken]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                _SELECT_TOKENS + "WHERE account_id = ? ORDER BY provider", (account_id,)
            )
        return [_stored(r) for r in rows]

    async def sealed_under_other_keys(self, key_id: str, limit: int) -> list[StoredProviderToken]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                _SELECT_TOKENS + "WHERE key_id <> ? ORDER BY account_id, provider LIMIT ?",
                (key_id, limit),
            )
        return [_stored(r) for r in rows]

    async def replace_sealed(self, stored: StoredProviderToken, old_key_id: str) -> bool:
        async with self._db.use() as conn:
            cursor = await conn.execute(
                "UPDATE provider_tokens SET key_id = ?, ciphertext = ? "
                "WHERE account_id = ? AND provider = ? AND key_id = ?",
                (
                    stored.sealed.key_id,
                    stored.sealed.ciphertext,
                    stored.account_id,
                    stored.identity.provider,
                    old_key_id,
                ),
            )
            return cursor.rowcount == 1


class SqliteRevocationOutbox(SqliteOutbox[PendingRevocation]):
    """:class:`~authgate.ports.provider_tokens.RevocationOutbox` in a SQLite file
    (``provider_token_revocations``)."""

    _table = "provider_token_revocations"
    _columns = (
        "id",
        "account_id",
        "provider",
        "subject",
        "key_id",
        "ciphertext",
        "created_at",
        "next_attempt_at",
        "attempts",
    )

    def _values(self, pending: PendingRevocation) -> tuple[object, ...]:
        return (
            pending.id,
            pending.account_id,
            pending.identity.provider,
            pending.identity.subject,
            pending.sealed.key_id,
            pending.sealed.ciphertext,
            ts(pending.created_at),
            ts(pending.next_attempt_at),
            pending.attempts,
        )

    def _pending(self, row: Sequence[Any]) -> PendingRevocation:
        return PendingRevocation(
            id=row[0],
            account_id=row[1],
            identity=ProviderIdentity(row[2], row[3]),
            sealed=SealedToken(row[4], row[5]),
            created_at=parse_ts(row[6]),
            next_attempt_at=parse_ts(row[7]),
            attempts=int(row[8]),
        )
