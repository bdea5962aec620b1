"""Provider tokens (sealed) and the revocation outbox in PostgreSQL, shared by every instance."""

from __future__ import annotations

from typing import Any

import asyncpg

from authgate.adapters import sql_rows
from authgate.domain.model import (
    PendingRevocation,
    StoredProviderToken,
)

from . import rows
from .outbox import PostgresOutbox

_SELECT_TOKENS = f"SELECT {sql_rows.PROVIDER_TOKEN_COLUMNS} FROM provider_tokens "  # noqa: S608


def _stored(r: asyncpg.Record) -> StoredProviderToken:
    return sql_rows.stored_token(r, rows.utc)


class PostgresProviderTokens(rows.Bindable):
    """:class:`~authgate.ports.provider_tokens.ProviderTokenStore` on a pool, or on one
    connection of a unit of work (:meth:`bound`)."""

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
            "DELETE FROM provider_tokens WHERE account_id = $1 "  # noqa: S608 - constant columns
            "AND ($2::text IS NULL OR provider = $2) "
            f"RETURNING {sql_rows.PROVIDER_TOKEN_COLUMNS}",
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


class PostgresRevocationOutbox(PostgresOutbox[PendingRevocation]):
    """:class:`~authgate.ports.provider_tokens.RevocationOutbox`
    (``provider_token_revocations``)."""

    _table = sql_rows.REVOCATION_OUTBOX
    _columns = sql_rows.REVOCATION_COLUMNS

    def _values(self, pending: PendingRevocation) -> tuple[Any, ...]:
        return sql_rows.revocation_values(pending, rows.utc)

    def _pending(self, row: asyncpg.Record) -> PendingRevocation:
        return sql_rows.pending_revocation(row, rows.utc)
