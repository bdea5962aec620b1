"""Every storage adapter behind one shape, for suites that run against each of them.

``open_store(kind, ...)`` gives an object with ``.accounts``, ``.states``, ``.events``,
``.units``, the other repositories of a unit of work's transaction,
``.ping()`` and ``.close()`` — the shape of :class:`~authgate.adapters.postgres.PostgresStore`
and :class:`~authgate.adapters.sqlite.SqliteStore`; the memory adapters get a small bundle.
``postgres-asyncpg-pool`` is the PostgreSQL adapters on asyncpg's pool instead of ours.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal, Protocol

import pytest

from authgate.adapters.memory import (
    MemoryAccounts,
    MemoryEvents,
    MemoryPasskeyChallenges,
    MemorySeenEvents,
    MemorySessionRecords,
    MemoryStates,
    MemoryUnitOfWork,
)
from authgate.adapters.postgres import open_postgres
from authgate.adapters.sqlite import open_sqlite
from authgate.ports.accounts import AccountRepository
from authgate.ports.events import SignInEventLog
from authgate.ports.openid import (
    AuthorizationCodes,
    Grants,
    LogoutOutbox,
    RefreshTokens,
    SessionClients,
)
from authgate.ports.passkeys import PasskeyChallenges, PasskeyStore
from authgate.ports.provider_tokens import ProviderTokenStore, RevocationOutbox
from authgate.ports.session_records import SessionRecords
from authgate.ports.state import StateStore
from authgate.ports.unit_of_work import UnitOfWork

StoreKind = Literal["memory", "sqlite", "postgres", "postgres-asyncpg-pool"]
KINDS: tuple[StoreKind, ...] = ("memory", "sqlite", "postgres")
# KINDS and the PostgreSQL adapters on asyncpg's pool: where the suites of the adapters run
WITH_ASYNCPG_POOL: tuple[StoreKind, ...] = (*KINDS, "postgres-asyncpg-pool")


def service_database_url(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> str:
    """The ``database.url`` of a service on ``kind`` (memory, sqlite or postgres) for one
    test: a SQLite file in ``tmp_path``, a clean PostgreSQL database."""
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'authgate.db'}"
    url: str = request.getfixturevalue("clean_postgres_url")
    return url


class Store(Protocol):
    @property
    def accounts(self) -> AccountRepository: ...
    @property
    def states(self) -> StateStore: ...
    @property
    def events(self) -> SignInEventLog: ...
    @property
    def units(self) -> UnitOfWork: ...
    @property
    def sessions(self) -> SessionRecords: ...
    @property
    def provider_tokens(self) -> ProviderTokenStore: ...
    @property
    def revocations(self) -> RevocationOutbox: ...
    @property
    def authorization_codes(self) -> AuthorizationCodes: ...
    @property
    def refresh_tokens(self) -> RefreshTokens: ...
    @property
    def grants(self) -> Grants: ...
    @property
    def session_clients(self) -> SessionClients: ...
    @property
    def logout_outbox(self) -> LogoutOutbox: ...
    @property
    def passkeys(self) -> PasskeyStore: ...
    @property
    def passkey_challenges(self) -> PasskeyChallenges: ...
    async def ping(self) -> None: ...
    async def close(self) -> None: ...


class MemoryStore:
    def __init__(self) -> None:
        self.accounts = MemoryAccounts()
        self.states = MemoryStates()
        self.events = MemoryEvents()
        self.sessions = MemorySessionRecords()
        self.units = MemoryUnitOfWork(self.accounts, self.events, self.sessions, MemorySeenEvents())
        self.provider_tokens = self.units.provider_tokens
        self.revocations = self.units.revocations
        self.authorization_codes = self.units.authorization_codes
        self.refresh_tokens = self.units.refresh_tokens
        self.grants = self.units.grants
        self.session_clients = self.units.session_clients
        self.logout_outbox = self.units.logout_outbox
        self.passkeys = self.units.passkeys
        self.passkey_challenges = MemoryPasskeyChallenges()

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        return None


async def open_store(
    kind: StoreKind,
    *,
    sqlite_path: Path | None = None,
    postgres_url: str | None = None,
    purge_interval: dt.timedelta = dt.timedelta(minutes=5),
) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        assert sqlite_path is not None
        return await open_sqlite(sqlite_path, purge_interval=purge_interval)
    assert postgres_url is not None
    return await open_postgres(
        postgres_url,
        1,
        10,
        5.0,
        purge_interval=purge_interval,
        asyncpg_pool=kind == "postgres-asyncpg-pool",
    )
