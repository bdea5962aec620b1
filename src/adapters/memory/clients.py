"""Stored clients and initial access tokens in memory (tests, and a single instance)."""

from __future__ import annotations

import datetime as dt

from authgate.domain.openid.registration import InitialAccessToken, StoredClient

from .journal import Stored, Table


class MemoryStoredClients(Stored):
    """:class:`~authgate.ports.stored_clients.StoredClients` in two dicts."""

    def __init__(self) -> None:
        self._clients: Table[str, StoredClient] = Table()
        # token digest -> (the token, spent)
        self._tokens: Table[str, tuple[InitialAccessToken, bool]] = Table()

    async def add(self, client: StoredClient) -> bool:
        if client.client_id in self._clients:
            return False
        self._clients[client.client_id] = client
        return True

    async def get(self, client_id: str) -> StoredClient | None:
        return self._clients.get(client_id)

    async def replace(self, client: StoredClient) -> bool:
        if client.client_id not in self._clients:
            return False
        self._clients[client.client_id] = client
        return True

    async def remove(self, client_id: str) -> bool:
        return self._clients.pop(client_id) is not None

    async def all(self) -> list[StoredClient]:
        return [c for _, c in sorted(self._clients.items())]

    async def add_initial_token(self, token: InitialAccessToken) -> None:
        self._tokens[token.token_hash] = (token, False)

    async def spend_initial_token(self, token_hash: str, now: dt.datetime) -> bool:
        self._tokens.delete_if(lambda t: t[1] or t[0].expires_at <= now)
        kept = self._tokens.get(token_hash)
        if kept is None:
            return False
        self._tokens[token_hash] = (kept[0], True)
        return True
