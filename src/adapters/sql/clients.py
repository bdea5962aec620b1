"""Stored clients (registered at run time or added by the operator) and initial access tokens:
a client's metadata is kept as its RFC 7591 JSON document, its secrets as salted digests."""

from __future__ import annotations

import datetime as dt

from authgate.domain.openid.registration import (
    InitialAccessToken,
    StoredClient,
    metadata_text,
    read_secrets,
    read_stored_metadata,
    secrets_text,
)

from .engine import Row, insert
from .housekeeping import Repository

_COLUMNS = "client_id, origin, metadata, secrets, registration_token_hash, created_at, updated_at"
_INSERT = insert("oauth_clients", _COLUMNS) + " ON CONFLICT (client_id) DO NOTHING"
_SELECT = f"SELECT {_COLUMNS} FROM oauth_clients"  # noqa: S608 - constant columns


class SqlStoredClients(Repository):
    """:class:`~authgate.ports.stored_clients.StoredClients`."""

    async def add(self, client: StoredClient) -> bool:
        return await self._db.execute(_INSERT, *self._args(client)) == 1

    async def get(self, client_id: str) -> StoredClient | None:
        row = await self._db.fetchrow(f"{_SELECT} WHERE client_id = $1", client_id)
        return self._client(row) if row is not None else None

    async def replace(self, client: StoredClient) -> bool:
        changed = await self._db.execute(
            "UPDATE oauth_clients SET origin = $2, metadata = $3, secrets = $4, "
            "registration_token_hash = $5, created_at = $6, updated_at = $7 "
            "WHERE client_id = $1",
            *self._args(client),
        )
        return changed == 1

    async def remove(self, client_id: str) -> bool:
        return (
            await self._db.execute("DELETE FROM oauth_clients WHERE client_id = $1", client_id) == 1
        )

    async def all(self) -> list[StoredClient]:
        return [self._client(r) for r in await self._db.fetch(f"{_SELECT} ORDER BY client_id")]

    async def add_initial_token(self, token: InitialAccessToken) -> None:
        sql = self._sql
        await self._db.execute(
            insert("oauth_initial_tokens", "token_hash, created_at, expires_at"),
            token.token_hash,
            sql.time(token.created_at),
            sql.time(token.expires_at),
        )

    async def spend_initial_token(self, token_hash: str, now: dt.datetime) -> bool:
        # The expired and spent ones go first: the table holds only what may still be used.
        await self._db.execute(
            "DELETE FROM oauth_initial_tokens WHERE expires_at <= $1 OR spent_at IS NOT NULL",
            self._sql.time(now),
        )
        spent = await self._db.execute(
            "UPDATE oauth_initial_tokens SET spent_at = $2 "
            "WHERE token_hash = $1 AND spent_at IS NULL AND expires_at > $2",
            token_hash,
            self._sql.time(now),
        )
        return spent == 1

    def _args(self, c: StoredClient) -> tuple[object, ...]:
        sql = self._sql
        return (
            c.client_id,
            c.origin,
            metadata_text(c.metadata),
            secrets_text(c.secrets),
            c.registration_token_hash,
            sql.time(c.created_at),
            sql.time(c.updated_at),
        )

    def _client(self, r: Row) -> StoredClient:
        read = self._sql.read_time
        return StoredClient(
            client_id=r[0],
            origin=r[1],
            metadata=read_stored_metadata(r[2]),
            secrets=read_secrets(r[3]),
            registration_token_hash=r[4],
            created_at=read(r[5]),
            updated_at=read(r[6]),
        )
