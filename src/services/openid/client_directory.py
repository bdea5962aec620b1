"""Every client the OpenID Provider knows, found by ``client_id``: the configuration's first
(kept in memory, answered without waiting), then each further source in order (registrations
kept in the database, client ID metadata documents). Every endpoint looks clients up here, so
a client's origin never changes what an endpoint checks."""

from __future__ import annotations

from collections.abc import Iterable

from authgate.domain.openid.clients import Client, ClientRegistry
from authgate.ports.openid import ClientSource


class ClientDirectory:
    """The configured clients and the further sources, looked up in that order."""

    def __init__(self, configured: ClientRegistry, sources: Iterable[ClientSource] = ()) -> None:
        self.configured = configured
        self.sources = tuple(sources)

    async def find(self, client_id: str) -> Client | None:
        """The client ``client_id`` names, or None when no source knows it."""
        client = self.configured.get(client_id)
        if client is not None:
            return client
        for source in self.sources:
            client = await source.find(client_id)
            if client is not None:
                return client
        return None

    @property
    def only_configured(self) -> bool:
        """Whether every client is in the configuration (no further source): then what the
        configured clients say holds for all of them."""
        return not self.sources
