"""One connection pool (:mod:`.pool`: ours, or asyncpg's) shared by the PostgreSQL adapters,
opened and closed as a unit."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from contextlib import AbstractAsyncContextManager
from types import TracebackType

import asyncpg

from authgate.adapters.bound_repositories import BoundRepositories, RepositoryMakers
from authgate.ports.accounts import IdentityRace

from . import events, housekeeping
from .accounts import IDENTITY_KEY, PostgresAccounts
from .authorization import (
    PostgresAuthorizationCodes,
    PostgresGrants,
    PostgresRefreshTokens,
    PostgresSessionClients,
)
from .errors import unavailable
from .events import PostgresEvents
from .housekeeping import PeriodicPurge
from .migrations import CONNECT_ERRORS, check_schema
from .outbox import PostgresLogoutOutbox
from .passkeys import PostgresPasskeyChallenges, PostgresPasskeys
from .pool import ConnectionPool, open_asyncpg_pool, open_pool
from .provider_tokens import PostgresProviderTokens, PostgresRevocationOutbox
from .seen_events import PostgresSeenEvents
from .sessions import PostgresSessionRecords
from .state import PostgresStates
from .unit import UnitConnection

log = logging.getLogger("authgate.storage")


class PostgresStore:
    """The accounts, state and event adapters on one pool, with readiness and shutdown.

    Connection loss needs no handling by callers: an operation during an outage raises
    (``OSError``, ``asyncpg.PostgresConnectionError``, ``asyncpg.InterfaceError`` or
    ``TimeoutError``), and the pool replaces a broken connection at its next lease, so the
    same pool serves again once the server is back.
    """

    def __init__(
        self,
        pool: ConnectionPool,
        *,
        ping_timeout: float = 1.0,
        event_retention: dt.timedelta = events.DEFAULT_RETENTION,
        purge_interval: dt.timedelta = housekeeping.DEFAULT_PURGE_INTERVAL,
    ) -> None:
        self.pool = pool
        self.accounts = PostgresAccounts(pool)
        self.states = PostgresStates(pool, purge_interval)
        self.events = PostgresEvents(pool, event_retention, purge_interval)
        self.sessions = PostgresSessionRecords(pool, purge_interval)
        self.provider_tokens = PostgresProviderTokens(pool)
        self.revocations = PostgresRevocationOutbox(pool)
        self.authorization_codes = PostgresAuthorizationCodes(pool, purge_interval)
        self.refresh_tokens = PostgresRefreshTokens(pool, purge_interval)
        self.grants = PostgresGrants(pool)
        self.session_clients = PostgresSessionClients(pool, purge_interval)
        self.logout_outbox = PostgresLogoutOutbox(pool)
        self.passkeys = PostgresPasskeys(pool)
        self.passkey_challenges = PostgresPasskeyChallenges(pool, purge_interval)
        self.units = PostgresUnitOfWork(
            pool,
            self.events,
            self.sessions,
            authorization_codes=self.authorization_codes,
            refresh_tokens=self.refresh_tokens,
            session_clients=self.session_clients,
        )
        self._ping_timeout = ping_timeout

    async def ping(self) -> None:
        """Readiness: a round trip to the server within the ping timeout; raises otherwise."""
        async with asyncio.timeout(self._ping_timeout), self.pool.acquire() as conn:
            await conn.fetchval("SELECT 1")

    async def housekeeping_idle(self) -> None:
        """Wait for running background purges (tests use it to observe their effect)."""
        await self.states.housekeeping.wait()
        await self.events.housekeeping.wait()
        await self.sessions.housekeeping.wait()
        for purging in self._op_purges():
            await purging.wait()

    def _op_purges(self) -> list[PeriodicPurge]:
        return [
            self.authorization_codes.housekeeping,
            self.refresh_tokens.housekeeping,
            self.session_clients.housekeeping,
            self.passkey_challenges.housekeeping,
        ]

    async def close(self, grace: float = 10.0) -> None:
        """Stop background purges and close the pool (forcibly after ``grace`` seconds)."""
        await self.states.housekeeping.close()
        await self.events.housekeeping.close()
        await self.sessions.housekeeping.close()
        for purging in self._op_purges():
            await purging.close()
        try:
            await asyncio.wait_for(self.pool.close(), grace)
        except TimeoutError:
            log.warning("closing the PostgreSQL pool timed out; terminating its connections")
            self.pool.terminate()


async def open_postgres(
    url: str,
    min_size: int = 1,
    max_size: int = 10,
    timeout: float = 5.0,  # noqa: ASYNC109 - a setting passed to the pool, not a deadline
    *,
    ping_timeout: float = 1.0,
    event_retention: dt.timedelta = events.DEFAULT_RETENTION,
    purge_interval: dt.timedelta = housekeeping.DEFAULT_PURGE_INTERVAL,
    check: bool = True,
    asyncpg_pool: bool = False,
) -> PostgresStore:
    """Open a pool on ``url`` (``postgresql://user:pass@host:port/db``) and the adapters on it.

    ``timeout`` bounds connecting and every command. With ``check`` (the default), refuse a
    database whose schema is behind (:class:`~.migrations.SchemaBehind`, naming
    ``authgate migrate --config FILE``). An unreachable server raises
    :class:`~.errors.DatabaseUnavailable`. Both are :class:`~.errors.PostgresStoreError`.
    ``asyncpg_pool``: on asyncpg's pool instead of ours (:mod:`.pool` says why ours; the tests
    and bench/pool_bench.py run both).
    """
    opener = open_asyncpg_pool if asyncpg_pool else open_pool
    try:
        pool = await opener(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            server_settings={"application_name": "authgate"},
        )
    except CONNECT_ERRORS as e:
        raise unavailable(url, e) from e
    try:
        if check:
            await check_schema(pool)
    except BaseException:
        await pool.close()
        raise
    return PostgresStore(
        pool,
        ping_timeout=ping_timeout,
        event_retention=event_retention,
        purge_interval=purge_interval,
    )


class PostgresUnitOfWork:
    """:class:`~authgate.ports.unit_of_work.UnitOfWork`: one pooled connection in one
    transaction for the block (begun when first needed, its result-less writes sent together:
    :mod:`.unit`); the repositories' own transactions nest as savepoints."""

    def __init__(
        self,
        pool: ConnectionPool,
        events: PostgresEvents,
        sessions: PostgresSessionRecords,
        *,
        authorization_codes: PostgresAuthorizationCodes,
        refresh_tokens: PostgresRefreshTokens,
        session_clients: PostgresSessionClients,
    ) -> None:
        self._pool = pool
        self._makers: RepositoryMakers[UnitConnection] = RepositoryMakers(
            accounts=PostgresAccounts,
            events=events.bound,
            sessions=sessions.bound,
            seen_events=PostgresSeenEvents,
            provider_tokens=PostgresProviderTokens,
            revocations=PostgresRevocationOutbox,
            authorization_codes=authorization_codes.bound,
            refresh_tokens=refresh_tokens.bound,
            grants=PostgresGrants,
            session_clients=session_clients.bound,
            logout_outbox=PostgresLogoutOutbox,
            passkeys=PostgresPasskeys,
        )

    def begin(self) -> AbstractAsyncContextManager[BoundRepositories[UnitConnection]]:
        return _Unit(self._pool, self._makers)

    def read(self) -> AbstractAsyncContextManager[BoundRepositories[UnitConnection]]:
        """A unit that only reads is an ordinary one: its plain reads run outside any
        transaction (READ COMMITTED, no lock taken) until something writes."""
        return self.begin()


class _Unit:
    """The ``async with`` of :meth:`PostgresUnitOfWork.begin`: a pooled connection for the
    block, its unit finished when the block ends and aborted when it raises. A unique violation
    of an identity, in a unit that created an account, is the lost race of two registrations
    (:class:`~authgate.ports.accounts.IdentityRace`)."""

    __slots__ = ("_accounts", "_lease", "_makers", "_unit")

    def __init__(self, pool: ConnectionPool, makers: RepositoryMakers[UnitConnection]) -> None:
        self._lease = pool.acquire()
        self._makers = makers

    async def __aenter__(self) -> BoundRepositories[UnitConnection]:
        self._unit = UnitConnection(await self._lease.__aenter__())
        repositories = BoundRepositories(self._makers, self._unit)
        self._accounts = repositories.accounts  # its creations decide what a violation means
        return repositories

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc is None:
                try:
                    await self._unit.finish()
                except BaseException as e:
                    await self._abort(e)
                    raise
            else:
                await self._abort(exc)
        finally:
            await self._lease.__aexit__(None, None, None)

    async def _abort(self, e: BaseException) -> None:
        await self._unit.abort(e)
        accounts = self._accounts
        if (
            isinstance(e, asyncpg.UniqueViolationError)
            and e.constraint_name == IDENTITY_KEY
            and isinstance(accounts, PostgresAccounts)
            and accounts.created_in_unit
        ):
            raise IdentityRace(str(e)) from e
