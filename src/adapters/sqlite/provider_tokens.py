"""Provider tokens (sealed) and the revocation outbox in SQLite."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from authgate.adapters import sql_rows
from authgate.domain.model import (
    PendingRevocation,
    StoredProviderToken,
)

from .db import Database, parse_ts, ts
from .outbox import SqliteOutbox

_SELECT_TOKENS = f"SELECT {sql_rows.PROVIDER_TOKEN_COLUMNS} FROM provider_tokens "  # noqa: S608


def _stored(r: Sequence[Any]) -> StoredProviderToken:
    return sql_rows.stored_token(r, parse_ts)


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
                "DELETE FROM provider_tokens WHERE account_id = ? "  # noqa: S608 - constant columns
                "AND (? IS NULL OR provider = ?) "
                f"RETURNING {sql_rows.PROVIDER_TOKEN_COLUMNS}",
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

    _table = sql_rows.REVOCATION_OUTBOX
    _columns = sql_rows.REVOCATION_COLUMNS

    def _values(self, pending: PendingRevocation) -> tuple[object, ...]:
        return sql_rows.revocation_values(pending, ts)

    def _pending(self, row: Sequence[Any]) -> PendingRevocation:
        return sql_rows.pending_revocation(row, parse_ts)
