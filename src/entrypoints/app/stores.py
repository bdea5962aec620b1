"""The stores: the database's repositories (memory, SQLite or PostgreSQL), the rate-limit
store (memory or Redis), and the revocation channel between instances (Redis, PostgreSQL
LISTEN/NOTIFY or this process only); the operator's ``migrate`` and ``config check`` reach
the same stores here (:func:`migrate`, :func:`reach_database`, :func:`reach_redis`).

asyncpg, redis and their adapters are imported only when the configuration names them: they
cost start-up time and resident memory that the embedded default (SQLite) does not need.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from authgate.adapters import memory
from authgate.adapters.memory import MemoryPasskeyChallenges, MemoryStates
from authgate.adapters.postgres import PostgresStoreError, redact
from authgate.adapters.ratelimit import NoRateLimit, RateLimitStore
from authgate.adapters.revocations import LocalRevocations
from authgate.adapters.sqlite import SchemaTooNew, SqliteStore, SqliteUnavailable, open_sqlite
from authgate.entrypoints.app.config import Config, StartupError
from authgate.entrypoints.rest import HealthCheck
from authgate.ports.accounts import AccountRepository
from authgate.ports.events import SignInEventLog
from authgate.ports.passkeys import PasskeyChallenges, PasskeyStore
from authgate.ports.provider_tokens import ProviderTokenStore, RevocationOutbox
from authgate.ports.ratelimit import RateLimiter
from authgate.ports.revocations import RevocationChannel
from authgate.ports.session_records import SessionRecords
from authgate.ports.state import StateStore
from authgate.ports.unit_of_work import UnitOfWork

if TYPE_CHECKING:
    from authgate.adapters.postgres import PostgresStore
    from authgate.adapters.postgres.pool import ConnectionPool as Pool

Closers = list[Callable[[], Awaitable[Any]]]


@attrs.frozen
class Stores:
    """The repositories of the configured database, the rate-limit store and the revocation
    channel, with the readiness checks that come with them."""

    accounts: AccountRepository
    states: StateStore
    events: SignInEventLog
    units: UnitOfWork
    session_records: SessionRecords
    provider_tokens: ProviderTokenStore
    revocation_outbox: RevocationOutbox
    passkey_challenges: PasskeyChallenges
    passkeys: PasskeyStore | None = None
    readiness: list[HealthCheck] = attrs.field(factory=list)
    pool: Pool | None = None  # PostgreSQL's, for LISTEN/NOTIFY
    limits: RateLimitStore = attrs.field(factory=lambda: RateLimitStore("memory://"))
    revocations: RevocationChannel = attrs.field(factory=LocalRevocations)

    def limiter(self, limit: str | None, namespace: str) -> RateLimiter:
        """A limit in a namespace of its own; null or empty: none."""
        if not limit:
            return NoRateLimit()
        return self.limits.limiter(limit, namespace=namespace)


async def open_stores(config: Config, closers: Closers) -> Stores:
    """The database ``database.url`` names (first: a schema this version cannot serve is
    refused before anything else is made), the rate-limit store and the revocation channel,
    started; each closer is added to ``closers``."""
    stores = await _open_database(config, closers)
    limits = rate_limit_store(config)
    revocations = _revocation_channel(config, stores.pool)
    await revocations.start()
    closers.append(revocations.close)
    return attrs.evolve(
        stores,
        limits=limits,
        revocations=revocations,
        readiness=[*stores.readiness, *_redis_readiness(config, limits)],
    )


def memory_stores(
    states: StateStore | None = None, challenges: PasskeyChallenges | None = None
) -> Stores:
    """Stores that open nothing (a memory database); the memory repositories are loaded here,
    on first use, so a service on SQLite or PostgreSQL never loads them."""
    accounts, events, sessions = (
        memory.MemoryAccounts(),
        memory.MemoryEvents(),
        memory.MemorySessionRecords(),
    )
    units = memory.MemoryUnitOfWork(accounts, events, sessions)
    return Stores(
        accounts=accounts,
        states=states or MemoryStates(),
        events=events,
        units=units,
        session_records=sessions,
        provider_tokens=units.provider_tokens,
        revocation_outbox=units.revocations,
        passkeys=units.passkeys,
        passkey_challenges=challenges or MemoryPasskeyChallenges(),
    )


def check(config: Config) -> None:
    """What :func:`open_stores` refuses in the configuration before it opens anything."""
    _revocation_kind(config)
    rate_limit_store(config)


def rate_limit_store(config: Config) -> RateLimitStore:
    """The store ``ratelimit.storage`` names (memory or Redis); Redis is reached later."""
    try:
        return RateLimitStore(
            config.ratelimit.storage,
            fail_open=config.ratelimit.fail_open,
            timeout_seconds=config.ratelimit.redis_timeout_seconds,
        )
    except ValueError as e:
        raise StartupError(f"ratelimit: {e}") from None


def _redis_readiness(config: Config, store: RateLimitStore) -> list[HealthCheck]:
    """Readiness names Redis where it is configured (the rate limits' store, and the
    revocation channel with it). It fails readiness only when the limits fail closed: with
    ``ratelimit.fail_open`` the service serves without Redis, degraded (the body says so)."""
    if config.ratelimit.storage.startswith("memory://"):
        return []
    return [HealthCheck("redis", store.ping, timeout=1.5, required=not store.fail_open)]


def _revocation_channel(config: Config, pool: Pool | None) -> RevocationChannel:
    """How instances tell each other about revocations (``session.revocation_channel``)."""
    kind = _revocation_kind(config)
    if kind == "redis":
        from authgate.adapters.revocations import RedisRevocations  # redis: only when used

        return RedisRevocations(config.ratelimit.storage)
    if kind == "postgres":
        assert pool is not None  # _revocation_kind refuses postgres without PostgreSQL
        from authgate.adapters.revocations import PostgresRevocations  # asyncpg: only then

        return PostgresRevocations(pool, config.database.url)
    return LocalRevocations()


def _revocation_kind(config: Config) -> str:
    """The channel ``session.revocation_channel`` names (``auto`` resolved); refused when the
    store it needs is not the configured one."""
    kind = config.session.revocation_channel
    redis = config.ratelimit.storage.startswith(("redis://", "rediss://", "unix://"))
    postgres = config.database.url.startswith(("postgresql://", "postgres://"))
    if kind == "auto":
        kind = "redis" if redis else "postgres" if postgres else "local"
    if kind == "redis" and not redis:
        raise StartupError(
            "session.revocation_channel: redis needs ratelimit.storage to be a Redis URL"
        )
    if kind == "postgres" and not postgres:
        raise StartupError("session.revocation_channel: postgres needs a PostgreSQL database.url")
    return kind


async def _open_database(config: Config, closers: Closers) -> Stores:
    """The repositories ``database.url`` names, with their readiness check."""
    url = config.database.url
    memory_states = MemoryStates(config.state.memory_max_entries)
    memory_challenges = MemoryPasskeyChallenges(config.passkeys.memory_max_challenges)
    if url.startswith("memory://"):
        return memory_stores(memory_states, memory_challenges)
    db = config.database
    retention = dt.timedelta(days=db.event_retention_days)
    store: PostgresStore | SqliteStore
    try:
        if url.startswith(("postgresql://", "postgres://")):
            from authgate.adapters.postgres import open_postgres  # asyncpg: only for PostgreSQL

            store = await open_postgres(
                url,
                db.pool_min_size,
                db.pool_max_size,
                db.timeout_seconds,
                ping_timeout=db.readiness_timeout_seconds,
                event_retention=retention,
            )
        elif url.startswith("sqlite:///"):
            # sqlite:///relative/path, sqlite:////absolute/path (SQLAlchemy's convention)
            store = await open_sqlite(
                url.removeprefix("sqlite:///"),
                ping_timeout=db.readiness_timeout_seconds,
                event_retention=retention,
            )
        else:
            raise StartupError(
                f"database.url: unsupported database {redact(url)!r} "
                "(postgresql://…, sqlite:///path or memory://)"
            )
    except (PostgresStoreError, SqliteUnavailable, SchemaTooNew) as e:
        # each is one line without a credential
        raise StartupError(f"database: {e}") from None
    closers.append(store.close)

    async def ping() -> None:
        await store.ping()

    memory = config.state.store == "memory"
    return Stores(
        accounts=store.accounts,
        states=memory_states if memory else store.states,
        events=store.events,
        units=store.units,
        session_records=store.sessions,
        provider_tokens=store.provider_tokens,
        revocation_outbox=store.revocations,
        passkeys=store.passkeys,
        passkey_challenges=memory_challenges if memory else store.passkey_challenges,
        readiness=[
            HealthCheck("database", ping, timeout=config.database.readiness_timeout_seconds + 0.5)
        ],
        pool=None if isinstance(store, SqliteStore) else store.pool,
    )


def migrate(config: Config) -> int:
    """``authgate migrate``: apply pending PostgreSQL migrations (SQLite migrates on open)."""
    url = config.database.url
    if not url.startswith(("postgresql://", "postgres://")):
        print(f"authgate: nothing to migrate for {url.split(':', 1)[0]} databases")
        return 0
    import asyncpg  # only for PostgreSQL (the embedded default does not need it)

    from authgate.adapters.postgres import migrate as postgres_migrate

    try:
        applied = asyncio.run(postgres_migrate(url))
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, PostgresStoreError) as e:
        raise StartupError(f"migrate: {e}") from None
    if applied:
        print(f"authgate: applied {len(applied)} migration(s): {', '.join(applied)}")
    else:
        print("authgate: the database schema is up to date")
    return 0


async def reach_redis(config: Config) -> str | None:
    """``authgate config check``: ping the Redis the configuration names (None: none is
    configured); what was reached. Raises :class:`StartupError` with one line naming the
    address (without a password) when it cannot."""
    url = config.ratelimit.storage
    if url.startswith("memory://"):
        return None
    where = redact(url).split("?", 1)[0]
    store = rate_limit_store(config)
    try:
        await asyncio.wait_for(store.ping(), max(3.0, config.ratelimit.redis_timeout_seconds))
    except Exception as e:
        raise StartupError(f"{where} does not answer ({type(e).__name__}: {e})") from None
    return where


async def reach_database(config: Config) -> str:
    """``authgate config check``: open the configured database (its schema checked as
    ``serve`` checks it), ask it one question and close it; what was reached. Raises
    :class:`StartupError` with one line (no credential) when it cannot."""
    if config.database.url.startswith("memory://"):
        return "memory (nothing is kept after the process ends)"
    closers: Closers = []
    try:
        stores = await _open_database(config, closers)
        errors: tuple[type[Exception], ...] = (TimeoutError, OSError, sqlite3.Error)
        if stores.pool is not None:  # PostgreSQL: _open_database has imported asyncpg
            import asyncpg

            errors = (*errors, asyncpg.PostgresError)
        for check in stores.readiness:
            try:
                await asyncio.wait_for(check.check(), check.timeout)
            except errors as e:
                raise StartupError(f"database: does not answer: {e or type(e).__name__}") from None
    finally:
        for close in reversed(closers):
            await close()
    return redact(config.database.url).split("?", 1)[0]
