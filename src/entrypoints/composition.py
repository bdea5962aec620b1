"""The composition root: the only module that knows every concrete adapter.

``create_app`` opens the resources the configuration names (store, HTTP client, rate-limit
store, session keys), wires them into the domain and the HTTP operations, and closes them with
the application. ``build_api`` registers the operations on given resources, so that the OpenAPI
document can be produced without opening anything.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import attrs
from aiohttp import web

from authgate import __version__
from authgate.adapters.clock import SystemClock
from authgate.adapters.identity import (
    OAuthIdentityProvider,
    ProviderSettings,
    ProviderSettingsError,
)
from authgate.adapters.identity.fetch import provider_session
from authgate.adapters.memory import (
    MemoryAccounts,
    MemoryEvents,
    MemoryProviderTokens,
    MemoryRevocationOutbox,
    MemorySessionRecords,
    MemoryStates,
    MemoryUnitOfWork,
)
from authgate.adapters.postgres import PostgresStoreError, redact
from authgate.adapters.ratelimit import NoRateLimit, RateLimitStore
from authgate.adapters.revocations import LocalRevocations
from authgate.adapters.sessions import (
    JwtSessionTokens,
    SessionKeyError,
    ephemeral_keys,
    load_or_create_keys,
)
from authgate.adapters.sqlite import SchemaTooNew, SqliteStore, SqliteUnavailable, open_sqlite
from authgate.adapters.tokens import JweTokenSealer, SealingKey, SealingKeyError
from authgate.domain.redirects import origin
from authgate.domain.scopes import ACCOUNT_MANAGE
from authgate.entrypoints import development
from authgate.entrypoints.config import (
    Config,
    backchannel_logout_path_of,
    callback_urls_of,
    notifications_path_of,
)
from authgate.entrypoints.http.account import AccountOperations
from authgate.entrypoints.http.caller import ClientAddress
from authgate.entrypoints.http.errors import answer_error
from authgate.entrypoints.http.jwks import JwksOperations
from authgate.entrypoints.http.renewal import renewal_hook
from authgate.entrypoints.http.session_auth import (
    SameOriginGuard,
    SessionVerifier,
    session_cookie_scheme,
)
from authgate.entrypoints.http.signin import SignInOperations
from authgate.entrypoints.rest import (
    Api,
    BearerJWT,
    Cors,
    HealthCheck,
    RecordRequest,
)
from authgate.entrypoints.startup import StartupError
from authgate.ports.accounts import AccountRepository
from authgate.ports.clock import Clock
from authgate.ports.events import SignInEventLog
from authgate.ports.identity import IdentityProvider
from authgate.ports.metrics import Metrics, NoMetrics
from authgate.ports.provider_tokens import (
    ProviderTokenStore,
    RevocationOutbox,
    TokenRevoker,
    TokenSealer,
)
from authgate.ports.ratelimit import RateLimiter
from authgate.ports.revocations import RevocationChannel
from authgate.ports.session_records import SessionRecords
from authgate.ports.sessions import SessionTokens
from authgate.ports.state import StateStore
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.account import AccountService
from authgate.services.provider_tokens import (
    ProviderTokenService,
    RevocationPolicy,
    RevocationWorker,
)
from authgate.services.sessions import SessionPolicy, SessionService
from authgate.services.signin import SignInPolicy, SignInService

# Imported where they are used, and only when the configuration asks for them: asyncpg, redis
# and the metrics libraries cost start-up time and resident memory that the embedded default
# (SQLite) does not need (docs/benchmarks.md).
if TYPE_CHECKING:
    from authgate.adapters.metrics import ServiceMetrics
    from authgate.adapters.postgres import PostgresStore
    from authgate.adapters.postgres.pool import Pool
    from authgate.entrypoints.http.provider_events import ReceiverRoute
    from authgate.services.provider_events import ProviderEventService, Receiver

log = logging.getLogger("authgate")

TITLE = "authgate"


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
    clock: Clock = attrs.field(factory=SystemClock)
    metrics: Metrics = attrs.field(factory=NoMetrics)
    readiness: list[HealthCheck] = attrs.field(factory=list)
    closers: list[Callable[[], Awaitable[Any]]] = attrs.field(factory=list)
    provider_tokens: ProviderTokenStore = attrs.field(factory=MemoryProviderTokens)
    revocation_outbox: RevocationOutbox = attrs.field(factory=MemoryRevocationOutbox)
    sealer: TokenSealer | None = None  # None: no provider_tokens.keys, no token is kept
    revokers: dict[str, TokenRevoker] = attrs.field(factory=dict)

    async def close(self) -> None:
        for close in reversed(self.closers):
            try:
                await close()
            except Exception:
                log.exception("error while closing a resource")


RESOURCES = web.AppKey("authgate.resources", Resources)


@attrs.frozen
class Services:
    """The use-case services, built once on the resources."""

    signin: SignInService
    sessions: SessionService
    account: AccountService
    provider_events: ProviderEventService | None  # None: no event receiver is configured
    provider_tokens: ProviderTokenService
    revocation_worker: RevocationWorker


def build_services(config: Config, resources: Resources) -> Services:
    """One service per concept (sign-in, sessions, the account, provider tokens), wired on
    ``resources``. The revocation worker is built, not started (:func:`create_app` starts
    it with the application)."""
    session = config.session
    tokens = config.provider_tokens
    provider_tokens = ProviderTokenService(resources.sealer)
    worker = RevocationWorker(
        outbox=resources.revocation_outbox,
        units=resources.units,
        sealer=resources.sealer,
        revokers=resources.revokers,
        clock=resources.clock,
        policy=RevocationPolicy(
            retry_initial=dt.timedelta(seconds=tokens.retry_initial_seconds),
            retry_max=dt.timedelta(seconds=tokens.retry_max_seconds),
            give_up_after=dt.timedelta(seconds=tokens.give_up_after_seconds),
            lease=dt.timedelta(seconds=tokens.lease_seconds),
            poll_seconds=tokens.poll_seconds,
        ),
    )
    provider_tokens.worker = worker
    sessions = SessionService(
        tokens=resources.sessions,
        records=resources.session_records,
        units=resources.units,
        channel=resources.revocations,
        clock=resources.clock,
        policy=SessionPolicy(
            ttl=dt.timedelta(seconds=session.ttl_seconds),
            absolute_max=dt.timedelta(seconds=session.absolute_max_seconds),
            reauthenticate_after=dt.timedelta(seconds=session.reauthenticate_after_seconds),
            live_cache=dt.timedelta(seconds=session.revocation_cache_seconds),
            sliding=session.sliding,
        ),
        metrics=resources.metrics,
    )
    signin = SignInService(
        providers=resources.providers,
        accounts=resources.accounts,
        states=resources.states,
        events=resources.events,
        units=resources.units,
        sessions=sessions,
        clock=resources.clock,
        policy=SignInPolicy(
            app_url=config.app.url,
            callback_urls={
                name: frozenset(callback_urls_of(config, name)) for name in resources.providers
            },
            state_ttl=dt.timedelta(seconds=config.state.ttl_seconds),
            require_binding=config.state.require_binding_cookie,
            login_path=config.app.login_path,
            onboarding_path=config.app.onboarding_path,
            dashboard_path=config.app.dashboard_path,
        ),
        metrics=resources.metrics,
        provider_tokens=provider_tokens,
    )
    account = AccountService(
        accounts=resources.accounts,
        events=resources.events,
        units=resources.units,
        sessions=sessions,
        providers=list(resources.providers),
        provider_tokens=provider_tokens,
    )
    provider_events = None
    if receiver_routes(config):
        # Provider events are off unless a receiver is configured: their modules only then.
        from authgate.services.provider_events import ProviderEventPolicy, ProviderEventService

        provider_events = ProviderEventService(
            receivers=_receivers(config, resources.providers),
            units=resources.units,
            events=resources.events,
            sessions=sessions,
            account=account,
            clock=resources.clock,
            policy=ProviderEventPolicy(
                delete_account_when_last_identity=(
                    config.provider_events.delete_account_when_last_identity
                )
            ),
        )
    return Services(signin, sessions, account, provider_events, provider_tokens, worker)


def receiver_routes(config: Config) -> list[ReceiverRoute]:
    """Every enabled event receiver, from the configuration alone: back-channel logout where
    asked; notifications in the provider's shape (Apple's for an apple_client_secret_jwt
    provider, Security Event Tokens for any other)."""
    if not any(p.backchannel_logout or p.notifications for p in config.providers.values()):
        return []  # without importing the receivers' modules
    from authgate.entrypoints.http.provider_events import ReceiverRoute
    from authgate.services.provider_events import Shape

    routes = []
    for name, p in config.providers.items():
        if p.backchannel_logout:
            path = backchannel_logout_path_of(name, p)
            routes.append(ReceiverRoute(name, Shape.BACKCHANNEL_LOGOUT, path))
        if p.notifications:
            apple = p.token_endpoint_auth == "apple_client_secret_jwt"  # noqa: S105
            shape = Shape.APPLE if apple else Shape.RISC
            routes.append(ReceiverRoute(name, shape, notifications_path_of(name, p)))
    return routes


def _receivers(config: Config, providers: dict[str, IdentityProvider]) -> list[Receiver]:
    """The verifier of each route, on its provider adapter's key sets (none when the
    adapters are not open: the OpenAPI document is built without them)."""
    from authgate.services.provider_events import Receiver, Shape

    max_age = config.provider_events.max_age_seconds
    receivers = []
    for route in receiver_routes(config):
        adapter = providers.get(route.provider)
        if not isinstance(adapter, OAuthIdentityProvider):
            continue
        settings = config.providers[route.provider]
        audiences = settings.event_audiences
        if route.shape is Shape.BACKCHANNEL_LOGOUT:
            verifier = adapter.logout_token_verifier(max_age_seconds=max_age, audiences=audiences)
        elif route.shape is Shape.APPLE:
            verifier = adapter.apple_notification_verifier(
                max_age_seconds=max_age, audiences=audiences
            )
        else:
            verifier = adapter.security_event_verifier(
                max_age_seconds=max_age,
                configuration_url=settings.risc_configuration,
                audiences=audiences,
            )
        receivers.append(Receiver(route.provider, route.shape, verifier, adapter.event_issuers()))
    return receivers


def build_api(config: Config, resources: Resources, services: Services | None = None) -> Api:
    """The API with every operation of the service registered on ``resources``."""
    services = services or build_services(config, resources)
    api = Api(TITLE, __version__, max_body_bytes=config.rest.max_body_bytes)
    # Operations let domain errors propagate; this one map answers them.
    api.on_exception(answer_error)
    verifier = SessionVerifier(services.sessions)
    bearer = BearerJWT("bearerAuth", verifier)
    public_url = config.rest.public_url
    # The application's pages (app.allowed_origins) may read the account and make changes with
    # the session cookie from their own origin: CORS with credentials, and the CSRF guard.
    # Pages of any other origin are refused, also when no origin is allowed.
    allowed = config.app.allowed_origins
    own = [origin(public_url)] if public_url else []
    guard = SameOriginGuard(own, allowed)
    cors = Cors(allowed, expose_headers=("WWW-Authenticate",), own_origins=own)
    cookie = session_cookie_scheme(verifier)
    manage = (bearer.with_scopes(ACCOUNT_MANAGE), cookie.with_scopes(ACCOUNT_MANAGE))
    client_address = ClientAddress(config.ratelimit.trusted_proxies, config.ratelimit.ipv6_prefix)
    SignInOperations(
        services.signin,
        manage,
        services.sessions,
        resources.limiter,
        client_address,
        resources.initiation_limiter,
        guard,
        cors,
    ).register(api)
    AccountOperations(services.account, bearer, cookie, guard, client_address, cors).register(api)
    JwksOperations(resources.sessions).register(api)
    routes = receiver_routes(config)
    if routes:
        from authgate.entrypoints.http.provider_events import ProviderEventOperations

        assert services.provider_events is not None  # built when a route is configured
        ProviderEventOperations(
            services.provider_events,
            routes,
            resources.event_limiter,
            client_address,
            resources.metrics,
        ).register(api)
    for check in resources.readiness:
        api.readiness.add(check)
    return api


def document(config: Config) -> dict[str, Any]:
    """The OpenAPI document, built without opening any resource."""
    keys = ephemeral_keys()
    callback, initiation, _ = _limiters(config, RateLimitStore("memory://"))
    stores = _memory_stores(MemoryStates())
    resources = Resources(
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
    )
    return build_api(config, resources).openapi()


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
        try:
            keys = load_or_create_keys(config.session.keys_file, config.session.generate_keys)
        except SessionKeyError as e:
            raise StartupError(str(e)) from None
        sessions = JwtSessionTokens(
            keys,
            issuer=config.session.issuer,
            audience=config.session.audience,
            ttl=dt.timedelta(seconds=config.session.ttl_seconds),
        )
        if prepare is not None:
            prepare(config)
        http = provider_session()
        closers.append(http.close)
        try:
            store = RateLimitStore(config.ratelimit.storage, fail_open=config.ratelimit.fail_open)
        except ValueError as e:
            raise StartupError(f"ratelimit: {e}") from None
        revocations = _revocation_channel(config, stores.pool)
        await revocations.start()
        closers.append(revocations.close)
        limiter, initiation_limiter, event_limiter = _limiters(config, store)
        clock = clock or SystemClock()
        metrics: Metrics = NoMetrics()
        if config.metrics.enabled:
            from authgate.adapters.metrics import ServiceMetrics  # prometheus_client: only when on

            counted = ServiceMetrics(config.otel.service.name)
            closers.append(_shutdown(counted))
            metrics = counted
        providers = _providers(config, http, clock, metrics)
        sealer = _sealer(config)
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
        )
    except BaseException:
        for close in reversed(closers):
            await close()
        raise


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


def _memory_stores(states: StateStore) -> _Stores:
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
    )


def _revocation_channel(config: Config, pool: Pool | None) -> RevocationChannel:
    """How instances tell each other about revocations (``session.revocation_channel``)."""
    kind = config.session.revocation_channel
    storage = config.ratelimit.storage
    redis = storage.startswith(("redis://", "rediss://", "unix://"))
    if kind == "auto":
        kind = "redis" if redis else "postgres" if pool is not None else "local"
    if kind == "redis":
        if not redis:
            raise StartupError(
                "session.revocation_channel: redis needs ratelimit.storage to be a Redis URL"
            )
        from authgate.adapters.revocations import RedisRevocations  # redis: only when used

        return RedisRevocations(storage)
    if kind == "postgres":
        if pool is None:
            raise StartupError(
                "session.revocation_channel: postgres needs a PostgreSQL database.url"
            )
        from authgate.adapters.revocations import PostgresRevocations  # asyncpg: only then

        return PostgresRevocations(pool, config.database.url)
    return LocalRevocations()


async def _open_store(config: Config, closers: list[Callable[[], Awaitable[Any]]]) -> _Stores:
    """The store ``database.url`` names, with its readiness check."""
    db = config.database
    url = db.url
    store: PostgresStore | SqliteStore
    pool: Pool | None = None
    memory_states = MemoryStates(config.state.memory_max_entries)
    if url.startswith("memory://"):
        return _memory_stores(memory_states)
    if url.startswith(("postgresql://", "postgres://")):
        from authgate.adapters.postgres import open_postgres  # asyncpg: only for PostgreSQL

        try:
            store = await open_postgres(
                url,
                db.pool_min_size,
                db.pool_max_size,
                db.timeout_seconds,
                ping_timeout=db.readiness_timeout_seconds,
                event_retention=dt.timedelta(days=db.event_retention_days),
            )
        except PostgresStoreError as e:  # each is one line without a credential
            raise StartupError(f"database: {e}") from None
        pool = store.pool
    elif url.startswith("sqlite:///"):
        # sqlite:///relative/path, sqlite:////absolute/path (SQLAlchemy's convention)
        path = url.removeprefix("sqlite:///")
        try:
            store = await open_sqlite(
                path,
                ping_timeout=db.readiness_timeout_seconds,
                event_retention=dt.timedelta(days=db.event_retention_days),
            )
        except (SqliteUnavailable, SchemaTooNew) as e:
            raise StartupError(f"database: {e}") from None
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
    )


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


async def create_app(
    config: Config,
    build: Callable[[Api, Config], web.Application],
    clock: Clock | None = None,
) -> web.Application:
    """Open the resources and build the application that closes them on shutdown."""
    if not config.state.require_binding_cookie:
        log.warning(
            "state.require_binding_cookie is false: callbacks without the binding cookie are "
            "admitted, so login-CSRF protection is off (an attacker can sign a victim in to "
            "the attacker's account)"
        )
    # The dev Apple key file, before the adapter reads it (once the database was accepted).
    resources = await open_resources(config, clock, prepare=development.prepare)
    services = build_services(config, resources)
    api = build_api(config, resources, services)
    # Renews a browser's session cookie on a successful answer (sliding sessions), and with
    # metrics on, records each request's duration: the API's hooks, in its error handling.
    api.after_response(renewal_hook(services.sessions))
    record = _request_recorder(config, resources)
    if record is not None:
        api.record_requests(record)
    app = build(api, config)
    app[RESOURCES] = resources  # for diagnostics and tests that look behind the HTTP API
    development.mount(app, config)  # /docs; /demo and /dev/idp in development
    if config.metrics.enabled:
        from authgate.adapters.metrics import ServiceMetrics  # imported by open_resources then

        if isinstance(resources.metrics, ServiceMetrics):
            try:
                await _mount_metrics(app, config, resources.metrics)
            except BaseException:
                await resources.close()  # the application that would close them never runs
                raise

    async def start_worker(_: web.Application) -> None:
        services.revocation_worker.start()

    async def close(_: web.Application) -> None:
        await services.revocation_worker.stop()
        await resources.close()

    app.on_startup.append(start_worker)
    app.on_cleanup.append(close)
    return app


def _request_recorder(config: Config, resources: Resources) -> RecordRequest | None:
    """What records each request's duration for metrics, when metrics are on."""
    if config.metrics.enabled:
        from authgate.adapters.metrics import ServiceMetrics  # imported by open_resources then

        if isinstance(resources.metrics, ServiceMetrics):
            return resources.metrics.http_request
    return None


async def _mount_metrics(app: web.Application, config: Config, metrics: ServiceMetrics) -> None:
    """``GET /metrics`` in the Prometheus text format: alone on ``metrics.host``:
    ``metrics.port`` (loopback by default: the API's port does not serve it), or on the main
    listener when ``metrics.port`` is null (the request durations are recorded by the hook
    create_app installs). Not an API operation: it is not in the OpenAPI document.

    A listener of its own is bound now, not as the application starts: a taken port is then
    a :class:`StartupError` of one line (aiohttp cleans nothing up after a failed start)."""

    async def scrape(_: web.Request) -> web.Response:
        # A snapshot of this moment: no cache may keep it (and no session cookie rides on it).
        return web.Response(
            body=metrics.exposition(),
            headers={"Content-Type": metrics.content_type, "Cache-Control": "no-store"},
        )

    port = config.metrics.port
    if port is None:
        app.router.add_get("/metrics", scrape)
        return
    host = config.metrics.host
    # A listener of its own, so that the scrape port stays off the public network.
    scrape_app = web.Application()
    scrape_app.router.add_get("/metrics", scrape)
    runner = web.AppRunner(scrape_app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as e:
        await runner.cleanup()
        # Typically another instance (or exporter) on this machine holds the port.
        reason = os.strerror(e.errno) if e.errno else str(e)
        raise StartupError(
            f"metrics.port: cannot listen on {host}:{port}: {reason} (choose another "
            "metrics.port, or metrics.enabled: false)"
        ) from None

    async def stop(_: web.Application) -> None:
        await runner.cleanup()

    app.on_cleanup.append(stop)


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
        store = RateLimitStore(url, fail_open=config.ratelimit.fail_open)
        await asyncio.wait_for(store.ping(), 3.0)
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


def provider_adapters(config: Config, http: aiohttp.ClientSession) -> dict[str, IdentityProvider]:
    """The configured providers' adapters on ``http`` (``authgate config check`` reaches
    them); :class:`StartupError` for a provider that cannot be set up."""
    return _providers(config, http, SystemClock())
