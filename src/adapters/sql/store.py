"""The repositories of one store, built once for either engine, and its unit of work."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TypedDict, Unpack

from authgate.adapters.bound_repositories import BoundRepositories
from authgate.ports.accounts import IdentityRace

from .accounts import SqlAccounts
from .authorization import SqlAuthorizationCodes, SqlGrants, SqlRefreshTokens, SqlSessionClients
from .clients import SqlStoredClients
from .device_authorizations import SqlDeviceAuthorizations
from .engine import Db, Dialect
from .events import DEFAULT_RETENTION, SqlEvents, SqlSeenEvents
from .housekeeping import DEFAULT_PURGE_INTERVAL, Purging
from .outbox import SqlLogoutOutbox, SqlProviderTokens, SqlRevocationOutbox
from .passkeys import SqlPasskeys
from .sessions import SqlSessionRecords
from .state import SqlPasskeyChallenges, SqlStates


class StoreOptions(TypedDict, total=False):
    """What either SQL store is opened with, beyond its database."""

    event_retention: dt.timedelta
    purge_interval: dt.timedelta
    ping_timeout: float


class SqlRepositories:
    """Every repository of a store on ``db`` (the store's connections) in ``sql``'s dialect."""

    def __init__(self, db: Db, sql: Dialect, **options: Unpack[StoreOptions]) -> None:
        self._db = db
        self._ping_timeout = options.get("ping_timeout", 1.0)
        event_retention = options.get("event_retention", DEFAULT_RETENTION)
        purge_interval = options.get("purge_interval", DEFAULT_PURGE_INTERVAL)
        self.accounts = SqlAccounts(db, sql)
        self.states = SqlStates(db, sql, purge_interval)
        self.events = SqlEvents(db, sql, event_retention, purge_interval)
        self.sessions = SqlSessionRecords(db, sql, purge_interval)
        self.seen_events = SqlSeenEvents(db, sql)
        self.provider_tokens = SqlProviderTokens(db, sql)
        self.revocations = SqlRevocationOutbox(db, sql)
        self.authorization_codes = SqlAuthorizationCodes(db, sql, purge_interval)
        self.refresh_tokens = SqlRefreshTokens(db, sql, purge_interval)
        self.grants = SqlGrants(db, sql)
        self.session_clients = SqlSessionClients(db, sql, purge_interval)
        self.logout_outbox = SqlLogoutOutbox(db, sql)
        self.passkeys = SqlPasskeys(db, sql)
        self.stored_clients = SqlStoredClients(db, sql)
        self.passkey_challenges = SqlPasskeyChallenges(db, sql, purge_interval)
        self.device_authorizations = SqlDeviceAuthorizations(db, sql, purge_interval)

    async def ping(self) -> None:
        """Readiness: a round trip to the database within the ping timeout; raises otherwise."""
        async with asyncio.timeout(self._ping_timeout):
            await self._db.fetch("SELECT 1")

    def purging(self) -> list[Purging]:
        """The repositories with a purge of their own."""
        return [r for r in vars(self).values() if isinstance(r, Purging)]


Opener = Callable[[], AbstractAsyncContextManager[Db]]
"""How an engine opens a unit: the connection for an ``async with`` that finishes the unit
when the block ends and aborts it when the block raises."""


class SqlUnitOfWork:
    """:class:`~authgate.ports.unit_of_work.UnitOfWork` on the units an engine opens: ``begin``
    for one that may write, ``read`` for one that only reads (what that spares is the
    engine's)."""

    def __init__(
        self, repositories: SqlRepositories, sql: Dialect, begin: Opener, read: Opener
    ) -> None:
        self._repositories = repositories
        self._sql = sql
        self._begin = begin
        self._read = read

    def begin(self) -> AbstractAsyncContextManager[BoundRepositories[Db]]:
        return _Unit(self._begin(), self._repositories, self._sql)

    def read(self) -> AbstractAsyncContextManager[BoundRepositories[Db]]:
        return _Unit(self._read(), self._repositories, self._sql)


class _Unit:
    """The ``async with`` of a unit: the engine's for the block, the repositories on its
    connection. A second insert of an identity's key, in a unit that created an account, is
    the lost race of two registrations (:class:`~authgate.ports.accounts.IdentityRace`)."""

    __slots__ = ("_bound", "_connection", "_repositories", "_sql")

    def __init__(
        self,
        connection: AbstractAsyncContextManager[Db],
        repositories: SqlRepositories,
        sql: Dialect,
    ) -> None:
        self._connection = connection
        self._repositories = repositories
        self._sql = sql

    async def __aenter__(self) -> BoundRepositories[Db]:
        db = await self._connection.__aenter__()
        self._bound = BoundRepositories(self._repositories, db)
        return self._bound

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._connection.__aexit__(exc_type, exc, tb)
        except BaseException as e:
            self._raise_race(e)
            raise
        if exc is not None:
            self._raise_race(exc)

    def _raise_race(self, e: BaseException) -> None:
        accounts = self._bound.__dict__.get("accounts")  # made only if it was used
        if (
            isinstance(accounts, SqlAccounts)
            and accounts.created_in_unit
            and self._sql.is_identity_race(e)
        ):
            raise IdentityRace(str(e)) from e
