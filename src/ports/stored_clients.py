"""The clients kept in the database (registered at run time, or added by the operator) and
the initial access tokens that let a developer register one."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.openid.registration import InitialAccessToken, StoredClient


class StoredClients(Protocol):
    """Stored clients by ``client_id``, and the initial access tokens by their digest."""

    async def add(self, client: StoredClient) -> bool:
        """Keep a new client; False, nothing written, when its ``client_id`` is taken."""

    async def get(self, client_id: str) -> StoredClient | None: ...

    async def replace(self, client: StoredClient) -> bool:
        """Write the client's new metadata, secrets and token digest; False when it is gone."""

    async def remove(self, client_id: str) -> bool:
        """Forget the client; False when there was none."""

    async def all(self) -> list[StoredClient]:
        """Every stored client, by ``client_id``."""

    async def add_initial_token(self, token: InitialAccessToken) -> None:
        """Keep a new initial access token (its digest)."""

    async def spend_initial_token(self, token_hash: str, now: dt.datetime) -> bool:
        """Spend an unspent, unexpired initial access token, atomically: of two registrations
        presenting it at once, one wins. False when it is unknown, spent or expired."""
