"""Every client the OpenID Provider knows, found by ``client_id``: the configuration's first
(kept in memory, answered without waiting), then each further source in order (registrations
kept in the database, client ID metadata documents). Every endpoint looks clients up here, so
a client's origin never changes what an endpoint checks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from authgate.domain.openid.clients import Client, ClientRegistry
from authgate.ports.openid import ClientSource
from authgate.ports.unit_of_work import Transaction


@runtime_checkable
class ClientSourceInUnit(Protocol):
    """A client source that reads the database, and can read it in a unit of work its caller
    holds: a second unit opened meanwhile would wait for the caller's (in memory, or behind
    SQLite's one writer) for ever."""

    async def find(self, client_id: str) -> Client | None: ...

    async def find_in(self, tx: Transaction, client_id: str) -> Client | None:
        """The client ``client_id`` names, read in ``tx``; None when this source does not
        know it."""


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

    async def find_in(self, tx: Transaction, client_id: str) -> Client | None:
        """:meth:`find` for a caller that holds the unit of work ``tx``: a source that reads
        the database reads it in ``tx`` rather than in a unit of its own."""
        client = self.configured.get(client_id)
        if client is not None:
            return client
        for source in self.sources:
            if isinstance(source, ClientSourceInUnit):
                client = await source.find_in(tx, client_id)
            else:
                client = await source.find(client_id)
            if client is not None:
                return client
        return None

    @property
    def only_configured(self) -> bool:
        """Whether every client is in the configuration (no further source): then what the
        configured clients say holds for all of them."""
        return not self.sources
