"""What the service holds while it runs: opened from the configuration, closed with it.

The composition root, the only code that knows every concrete adapter, is three modules, each
importing only those before it: this one opens the resources;
:mod:`~authgate.entrypoints.wiring` builds the use-case services on them;
:mod:`~authgate.entrypoints.assembly` registers the HTTP operations on both and builds the
application that closes the resources on shutdown.

:func:`open_resources` opens the database's repositories (memory, SQLite or PostgreSQL), the
session keys, one HTTP client session with an adapter per identity provider, the rate-limit
store (memory or Redis) and its limiters, the revocation channel between instances, the
provider tokens' sealer and the metrics, into :class:`Resources`, which closes them in reverse
order; :func:`unopened_resources` stands in for them where nothing may be opened (the OpenAPI
document). The operator's commands reach the same things here (:func:`migrate`,
:func:`reach_database`, :func:`reach_redis`, :func:`provider_adapters`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import attrs
from joserfc.jwk import KeySet

from authgate.adapters.clock import SystemClock
from authgate.adapters.http_fetch import provider_session
from authgate.adapters.jose import (
    JweTokenSealer,
    JwtSessionTokens,
    SealingKey,
    SealingKeyError,
    SessionKeyError,
    ephemeral_keys,
    load_or_create_keys,
)
from authgate.adapters.memory import (
    MemoryAccounts,
    MemoryEvents,
    MemoryPasskeyChallenges,
    MemoryProviderTokens,
    MemoryRevocationOutbox,
    MemorySessionRecords,
    MemoryStates,
    MemoryUnitOfWork,
)
from authgate.adapters.postgres import PostgresStoreError, redact
from authgate.adapters.provider import (
    OAuthIdentityProvider,
    ProviderSettings,
    ProviderSettingsError,
)
from authgate.adapters.ratelimit import NoRateLimit, RateLimitStore
from authgate.adapters.revocations import LocalRevocations
from authgate.adapters.sqlite import SchemaTooNew, SqliteStore, SqliteUnavailable, open_sqlite
from authgate.domain.openid.clients import ClientRegistry
from authgate.entrypoints.config import Config, client_registry, openid_issuer
from authgate.entrypoints.rest import HealthCheck
from authgate.entrypoints.startup import StartupError
from authgate.ports.accounts import AccountRepository
from authgate.ports.clock import Clock
from authgate.ports.events import SignInEventLog
from authgate.ports.metrics import Metrics, NoMetrics
from authgate.ports.openid import LogoutTokenSender
from authgate.ports.passkeys import PasskeyChallenges, PasskeyStore
from authgate.ports.provider import IdentityProvider
from authgate.ports.provider_tokens import (
    ProviderTokenStore,
    RevocationOutbox,
    TokenRevoker,
    TokenSealer,
)
from authgate.ports.ratelimit import RateLimiter
from authgate.ports.revocations import RevocationChannel
from authgate.ports.session_records import SessionRecords
from authgate.ports.session_tokens import SessionTokens
from authgate.ports.state import StateStore
from authgate.ports.unit_of_work import UnitOfWork

# Imported where they are used, and only when the configuration asks for them: asyncpg, redis
# and the metrics libraries cost start-up time and resident memory that the embedded default
# (SQLite) does not need (docs/benchmarks.md).
if TYPE_CHECKING:
    from authgate.adapters.metrics import ServiceMetrics
    from authgate.adapters.postgres import PostgresStore
    from authgate.adapters.postgres.pool import ConnectionPool as Pool
    from authgate.ports.jose import TokenSigner
    from authgate.ports.openid import ClientAssertionSignatures

log = logging.getLogger("authgate")


@attrs.frozen
class OpenIdResources:
    """What authgate as an OpenID Provider needs: the registered clients, the signer of their
    ID, access and logout tokens (the service's one key set, its RSA key first), the keys
    ``private_key_jwt`` clients sign their assertions with, and the clients' back-channel
    logout endpoints."""

    clients: ClientRegistry
    signer: TokenSigner
    client_keys: ClientAssertionSignatures
    logout_sender: LogoutTokenSender


@attrs.frozen
class OpenIdLimits:
    """The OpenID Provider's rate limits (``ratelimit.token`` and the ones after it). Only a
    confidential client that authenticated is counted by its client_id alone: anyone can name
    a public client, so its budget is counted by client and client address, and everything
    else by the client address (``ratelimit.trusted_proxies``), so that junk from one address
    never refuses another address's requests."""

    token_client: RateLimiter = attrs.field(factory=NoRateLimit)  # by client_id
    token_public_client: RateLimiter = attrs.field(factory=NoRateLimit)  # by client, address
    token_address: RateLimiter = attrs.field(factory=NoRateLimit)
    token_failures: RateLimiter = attrs.field(factory=NoRateLimit)  # peeked, spent on failure
    authorize: RateLimiter = attrs.field(factory=NoRateLimit)
    userinfo: RateLimiter = attrs.field(factory=NoRateLimit)
    logout: RateLimiter = attrs.field(factory=NoRateLimit)


def _openid(
    config: Config, keys: KeySet, http: aiohttp.ClientSession | None, clock: Clock
) -> OpenIdResources | None:
    """The provider face's resources when clients are registered (``http`` None: for the
    OpenAPI document, which fetches nothing)."""
    if not config.clients:
        return None
    # The provider face's modules are imported only when clients are registered.
    from authgate.adapters.jose import JwtTokenSigner
    from authgate.adapters.openid import HttpLogoutTokenSender, RegisteredClientKeys

    signer = JwtTokenSigner(keys, issuer=openid_issuer(config))
    for client in config.clients.values():
        if client.id_token_signed_response_alg == "ES256" and not signer.supports("ES256"):  # noqa: S105
            raise StartupError(
                "clients: ES256 ID tokens need a P-256 session key; the key file's is Ed25519"
            )
    return OpenIdResources(
        clients=client_registry(config),
        signer=signer,
        client_keys=RegisteredClientKeys(http, clock),
        logout_sender=HttpLogoutTokenSender(
            http, timeout_seconds=config.logout_tokens.timeout_seconds
        ),
    )


@attrs.define
class Resources:
    """Everything the operations need, opened for one running application."""

    accounts: AccountRepository
    states: StateStore
    events: SignInEventLog
    units: UnitOfWork
    sessions: SessionTokens
    session_records: SessionRecords
    revocations: RevocationChannel
    limiter: RateLimiter  # the callback's
    initiation_limiter: RateLimiter
    providers: dict[str, IdentityProvider]
    event_limiter: RateLimiter = attrs.field(factory=NoRateLimit)  # the event receivers'
    openid_limits: OpenIdLimits = attrs.field(factory=OpenIdLimits)  # ratelimit.token and after
    clock: Clock = attrs.field(factory=SystemClock)
    metrics: Metrics = attrs.field(factory=NoMetrics)
    readiness: list[HealthCheck] = attrs.field(factory=list)
    closers: list[Callable[[], Awaitable[Any]]] = attrs.field(factory=list)
    provider_tokens: ProviderTokenStore = attrs.field(factory=MemoryProviderTokens)
    revocation_outbox: RevocationOutbox = attrs.field(factory=MemoryRevocationOutbox)
    sealer: TokenSealer | None = None  # None: no provider_tokens.keys, no token is kept
    revokers: dict[str, TokenRevoker] = attrs.field(factory=dict)
    openid: OpenIdResources | None = None  # None: no client is registered
    # Introspection, per client (ratelimit.introspection; unset: no limit).
    introspection_limiter: RateLimiter = attrs.field(factory=NoRateLimit)
    # Passkeys: the accounts' credentials (the database's), the ceremonies' challenges, and
    # the ceremonies' limit per client (ratelimit.passkeys).
    passkeys: PasskeyStore | None = None
    passkey_challenges: PasskeyChallenges = attrs.field(factory=MemoryPasskeyChallenges)
    passkey_limiter: RateLimiter = attrs.field(factory=NoRateLimit)

    async def close(self) -> None:
        for close in reversed(self.closers):
            try:
                await close()
            except Exception:
                log.exception("error while closing a resource")


async def open_resources(
    config: Config,
    clock: Clock | None = None,
    prepare: Callable[[Config], None] | None = None,
) -> Resources:
    """Open what the configuration names; on failure close what was opened and raise.

    The database comes first: a database this version cannot serve (a schema behind) is
    refused before any file is made. ``prepare`` makes what the providers' adapters read
    (the development Apple key), after that. ``clock`` replaces the system clock (tests move
    time with it)."""
    closers: list[Callable[[], Awaitable[Any]]] = []
    try:
        stores = await _open_store(config, closers)
        keys = _key_set(config)
        sessions = _session_tokens(config, keys)
        if prepare is not None:
            prepare(config)
        http = provider_session()
        closers.append(http.close)
        store = _rate_limit_store(config)
        revocations = _revocation_channel(config, stores.pool)
        await revocations.start()
        closers.append(revocations.close)
        limiter, initiation_limiter, event_limiter = _limiters(config, store)
        clock = clock or SystemClock()
        metrics = _metrics(config, closers)
        providers = _providers(config, http, clock, metrics)
        sealer = _sealer(config)
        openid = _openid(config, keys, http, clock)
        return Resources(
            accounts=stores.accounts,
            states=stores.states,
            events=stores.events,
            units=stores.units,
            session_records=stores.session_records,
            revocations=revocations,
            sessions=sessions,
            limiter=limiter,
            initiation_limiter=initiation_limiter,
            providers=providers,
            event_limiter=event_limiter,
            clock=clock,
            metrics=metrics,
            readiness=[*stores.readiness, *_redis_readiness(config, store)],
            closers=closers,
            provider_tokens=stores.provider_tokens,
            revocation_outbox=stores.revocations,
            sealer=sealer,
            revokers={n: p for n, p in providers.items() if isinstance(p, OAuthIdentityProvider)},
            openid=openid,
            openid_limits=_openid_limits(config, store),
            introspection_limiter=_introspection_limiter(config, store),
            passkeys=stores.passkeys,
            passkey_challenges=stores.passkey_challenges,
            passkey_limiter=store.limiter(config.ratelimit.passkeys, namespace="authgate-passkeys"),
        )
    except BaseException:
        for close in reversed(closers):
            await close()
        raise


def unopened_resources(config: Config) -> Resources:
    """Resources that open nothing (memory stores, ephemeral session keys, no provider):
    enough to register the operations on, for the OpenAPI document."""
    keys = ephemeral_keys(rsa=bool(config.clients))
    callback, initiation, _ = _limiters(config, RateLimitStore("memory://"))
    stores = _memory_stores(MemoryStates())
    return Resources(
        accounts=stores.accounts,
        states=stores.states,
        events=stores.events,
        units=stores.units,
        session_records=stores.session_records,
        revocations=LocalRevocations(),
        sessions=JwtSessionTokens(
            keys, issuer="document", audience="document", ttl=dt.timedelta(seconds=1)
        ),
        limiter=callback,
        initiation_limiter=initiation,
        providers={},
        openid=_openid(config, keys, None, SystemClock()),
        passkeys=stores.passkeys,
        passkey_challenges=stores.passkey_challenges,
    )


def _key_set(config: Config) -> KeySet:
    """The service's one key set, from the key file (made on a first start when
    ``session.generate_keys`` allows): the session key, and an RSA key when clients are
    registered (their ID and access tokens)."""
    try:
        return load_or_create_keys(
            config.session.keys_file, config.session.generate_keys, rsa=bool(config.clients)
        )
    except SessionKeyError as e:
        raise StartupError(str(e)) from None


def _session_tokens(config: Config, keys: KeySet) -> JwtSessionTokens:
    """The session tokens, signed with the key set's session key."""
    return JwtSessionTokens(
        keys,
        issuer=config.session.issuer,
        audience=config.session.audience,
        ttl=dt.timedelta(seconds=config.session.ttl_seconds),
    )


def _rate_limit_store(config: Config) -> RateLimitStore:
    """The store ``ratelimit.storage`` names (memory or Redis); Redis is reached later."""
    try:
        return RateLimitStore(
            config.ratelimit.storage,
            fail_open=config.ratelimit.fail_open,
            timeout_seconds=config.ratelimit.redis_timeout_seconds,
        )
    except ValueError as e:
        raise StartupError(f"ratelimit: {e}") from None


def _metrics(config: Config, closers: list[Callable[[], Awaitable[Any]]]) -> Metrics:
    """The service's metrics when ``metrics.enabled`` (shut down with the resources)."""
    if not config.metrics.enabled:
        return NoMetrics()
    from authgate.adapters.metrics import ServiceMetrics  # prometheus_client: only when on

    metrics = ServiceMetrics(config.otel.service.name)
    closers.append(_shutdown(metrics))
    return metrics


def _redis_readiness(config: Config, store: RateLimitStore) -> list[HealthCheck]:
    """Readiness names Redis where it is configured (the rate limits' store, and the
    revocation channel with it). It fails readiness only when the limits fail closed: with
    ``ratelimit.fail_open`` the service serves without Redis, degraded (the body says so)."""
    if config.ratelimit.storage.startswith("memory://"):
        return []
    return [HealthCheck("redis", store.ping, timeout=1.5, required=not store.fail_open)]


def _sealer(config: Config) -> TokenSealer | None:
    """The sealer of ``provider_tokens.keys`` (checked by the configuration), or None."""
    try:
        keys = [SealingKey.from_text(k.id, k.secret) for k in config.provider_tokens.keys]
    except SealingKeyError as e:
        raise StartupError(f"provider_tokens.keys: {e}") from None
    if not keys:
        return None  # ProviderTokenService warns once a provider hands out a token to keep
    return JweTokenSealer(keys)


def _shutdown(metrics: ServiceMetrics) -> Callable[[], Awaitable[None]]:
    async def shutdown() -> None:
        # The last OTLP export may wait on a collector that does not answer: off the loop.
        await asyncio.to_thread(metrics.shutdown)

    return shutdown


def _limiters(
    config: Config, store: RateLimitStore
) -> tuple[RateLimiter, RateLimiter, RateLimiter]:
    """The callback's limit, the initiation's and the event receivers', each in its own
    namespace of ``store``: a started sign-in does not spend the callback's budget, nor a
    callback the initiation's, nor a provider's events either."""
    callback = store.limiter(config.ratelimit.callback, namespace="authgate-callback")
    initiation: RateLimiter = NoRateLimit()
    if config.ratelimit.initiation:  # null or empty: switched off
        initiation = store.limiter(config.ratelimit.initiation, namespace="authgate-initiation")
    events = store.limiter(config.ratelimit.provider_events, namespace="authgate-events")
    return callback, initiation, events


def _openid_limits(config: Config, store: RateLimitStore) -> OpenIdLimits:
    """The OpenID Provider's limits, each in a namespace of its own (a public client's
    budget apart from the confidential clients', so that no key of one is a key of the
    other); none when no client is registered."""
    if not config.clients:
        return OpenIdLimits()
    rates = config.ratelimit

    def limiter(limit: str | None, namespace: str) -> RateLimiter:
        if not limit:  # null or empty: switched off
            return NoRateLimit()
        return store.limiter(limit, namespace=namespace)

    return OpenIdLimits(
        token_client=limiter(rates.token, "authgate-token"),
        token_public_client=limiter(rates.token, "authgate-token-public"),
        token_address=limiter(rates.token_address, "authgate-token-address"),
        token_failures=limiter(rates.token_failures, "authgate-token-failures"),
        authorize=limiter(rates.authorize, "authgate-authorize"),
        userinfo=limiter(rates.userinfo, "authgate-userinfo"),
        logout=limiter(rates.logout, "authgate-logout"),
    )


def _introspection_limiter(config: Config, store: RateLimitStore) -> RateLimiter:
    """The introspection endpoint's limit per client, in a namespace of its own."""
    limit = config.ratelimit.introspection
    if not limit:
        return NoRateLimit()
    return store.limiter(limit, namespace="authgate-introspection")


@attrs.frozen
class _Stores:
    """The repositories of the configured database, and what else comes with it."""

    accounts: AccountRepository
    states: StateStore
    events: SignInEventLog
    units: UnitOfWork
    session_records: SessionRecords
    readiness: list[HealthCheck] = attrs.field(factory=list)
    pool: Pool | None = None  # PostgreSQL's, for LISTEN/NOTIFY
    provider_tokens: ProviderTokenStore = attrs.field(factory=MemoryProviderTokens)
    revocations: RevocationOutbox = attrs.field(factory=MemoryRevocationOutbox)
    passkeys: PasskeyStore | None = None
    passkey_challenges: PasskeyChallenges = attrs.field(factory=MemoryPasskeyChallenges)


def _memory_stores(states: StateStore, challenges: PasskeyChallenges | None = None) -> _Stores:
    accounts, events, sessions = MemoryAccounts(), MemoryEvents(), MemorySessionRecords()
    units = MemoryUnitOfWork(accounts, events, sessions)
    return _Stores(
        accounts=accounts,
        states=states,
        events=events,
        units=units,
        session_records=sessions,
        provider_tokens=units.provider_tokens,
        revocations=units.revocations,
        passkeys=units.passkeys,
        passkey_challenges=challenges or MemoryPasskeyChallenges(),
    )


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


def check_settings(config: Config) -> None:
    """What :func:`open_resources` refuses in the configuration before it opens anything
    (:class:`StartupError`): ``authgate config check`` runs it too, through
    :func:`~authgate.entrypoints.assembly.check`."""
    _revocation_kind(config)
    _rate_limit_store(config)
    _sealer(config)


async def _open_store(config: Config, closers: list[Callable[[], Awaitable[Any]]]) -> _Stores:
    """The store ``database.url`` names, with its readiness check."""
    db = config.database
    url = db.url
    store: PostgresStore | SqliteStore
    pool: Pool | None = None
    memory_states = MemoryStates(config.state.memory_max_entries)
    memory_challenges = MemoryPasskeyChallenges(config.passkeys.memory_max_challenges)
    if url.startswith("memory://"):
        return _memory_stores(memory_states, memory_challenges)
    if url.startswith(("postgresql://", "postgres://")):
        store = await _open_postgres(config)
        pool = store.pool
    elif url.startswith("sqlite:///"):
        store = await _open_sqlite(config)
    else:
        raise StartupError(
            f"database.url: unsupported database {redact(url)!r} "
            "(postgresql://…, sqlite:///path or memory://)"
        )
    closers.append(store.close)

    async def ping() -> None:
        await store.ping()

    check = HealthCheck("database", ping, timeout=db.readiness_timeout_seconds + 0.5)
    states: StateStore = memory_states if config.state.store == "memory" else store.states
    challenges: PasskeyChallenges = (
        memory_challenges if config.state.store == "memory" else store.passkey_challenges
    )
    return _Stores(
        accounts=store.accounts,
        states=states,
        events=store.events,
        units=store.units,
        session_records=store.sessions,
        readiness=[check],
        pool=pool,
        provider_tokens=store.provider_tokens,
        revocations=store.revocations,
        passkeys=store.passkeys,
        passkey_challenges=challenges,
    )


async def _open_postgres(config: Config) -> PostgresStore:
    db = config.database
    from authgate.adapters.postgres import open_postgres  # asyncpg: only for PostgreSQL

    try:
        return await open_postgres(
            db.url,
            db.pool_min_size,
            db.pool_max_size,
            db.timeout_seconds,
            ping_timeout=db.readiness_timeout_seconds,
            event_retention=dt.timedelta(days=db.event_retention_days),
        )
    except PostgresStoreError as e:  # each is one line without a credential
        raise StartupError(f"database: {e}") from None


async def _open_sqlite(config: Config) -> SqliteStore:
    db = config.database
    # sqlite:///relative/path, sqlite:////absolute/path (SQLAlchemy's convention)
    path = db.url.removeprefix("sqlite:///")
    try:
        return await open_sqlite(
            path,
            ping_timeout=db.readiness_timeout_seconds,
            event_retention=dt.timedelta(days=db.event_retention_days),
        )
    except (SqliteUnavailable, SchemaTooNew) as e:
        raise StartupError(f"database: {e}") from None


def _providers(
    config: Config, http: aiohttp.ClientSession, clock: Clock, metrics: Metrics | None = None
) -> dict[str, IdentityProvider]:
    """One adapter per configured provider, in configuration order."""
    providers: dict[str, IdentityProvider] = {}
    for name, p in config.providers.items():
        pem = None
        if p.private_key_file is not None:
            try:
                pem = Path(p.private_key_file).read_text()
            except OSError as e:
                raise StartupError(
                    f"providers.{name}.private_key_file: cannot read {p.private_key_file}: "
                    f"{e.strerror or e}"
                ) from None
        try:
            settings = ProviderSettings(
                name=name,
                client_id=p.client_id,
                scopes=tuple(p.scopes),
                client_secret=p.client_secret,
                issuer=p.issuer,
                additional_issuers=tuple(p.additional_issuers),
                trusted_audiences=tuple(p.trusted_audiences),
                require_response_iss=p.require_response_iss,
                signin_max_age_seconds=p.signin_max_age_seconds,
                states_auth_time=p.states_auth_time,
                authorization_endpoint=p.authorization_endpoint,
                token_endpoint=p.token_endpoint,
                jwks_uri=p.jwks_uri,
                userinfo_endpoint=p.userinfo_endpoint,
                profile_endpoint=p.profile_endpoint,
                token_endpoint_auth=p.token_endpoint_auth,
                id_token_algorithms=tuple(p.id_token_algorithms),
                team_id=p.team_id,
                key_id=p.key_id,
                private_key_pem=pem,
                response_mode=p.response_mode,
                pkce=p.pkce,
                timeout_seconds=p.timeout_seconds,
                revocation_endpoint=p.revocation_endpoint,
                revocation_auth=p.revocation_auth,
            )
            providers[name] = OAuthIdentityProvider(settings, http, clock, metrics)
        except ProviderSettingsError as e:
            raise StartupError(f"providers.{name}: {e}") from None
    return providers


def provider_adapters(config: Config, http: aiohttp.ClientSession) -> dict[str, IdentityProvider]:
    """The configured providers' adapters on ``http`` (``authgate config check`` reaches
    them); :class:`StartupError` for a provider that cannot be set up."""
    return _providers(config, http, SystemClock())


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
    try:
        store = RateLimitStore(
            url,
            fail_open=config.ratelimit.fail_open,
            timeout_seconds=config.ratelimit.redis_timeout_seconds,
        )
        await asyncio.wait_for(store.ping(), max(3.0, config.ratelimit.redis_timeout_seconds))
    except ValueError as e:
        raise StartupError(f"ratelimit: {e}") from None
    except Exception as e:
        raise StartupError(f"{where} does not answer ({type(e).__name__}: {e})") from None
    return where


async def reach_database(config: Config) -> str:
    """``authgate config check``: open the configured database (its schema checked as
    ``serve`` checks it), ask it one question and close it; what was reached. Raises
    :class:`StartupError` with one line (no credential) when it cannot."""
    if config.database.url.startswith("memory://"):
        return "memory (nothing is kept after the process ends)"
    closers: list[Callable[[], Awaitable[Any]]] = []
    try:
        stores = await _open_store(config, closers)
        errors: tuple[type[Exception], ...] = (TimeoutError, OSError, sqlite3.Error)
        if stores.pool is not None:  # PostgreSQL: _open_store has imported asyncpg
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
