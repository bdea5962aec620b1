"""The application: the HTTP operations on the services, and the aiohttp application of them.

Last of the composition root's three modules: :mod:`~authgate.entrypoints.resources` opens what
the service holds, :mod:`~authgate.entrypoints.wiring` builds the services on it, and this
module assembles. :func:`build_api` registers every operation (sign-in, account, key set,
provider events) with its security schemes, CORS and rate limits; :func:`create_app` opens the
resources, adds the sliding sessions' renewal, the request metrics and ``/metrics``, and the
development additions (:mod:`~authgate.entrypoints.development`), and closes everything on
shutdown; :func:`document` is the OpenAPI document, built without opening anything.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from authgate import __version__
from authgate.domain.redirects import origin
from authgate.domain.scopes import ACCOUNT_MANAGE
from authgate.entrypoints import development
from authgate.entrypoints.config import Config, callback_urls_of, passkey_origins
from authgate.entrypoints.http.account import AccountOperations
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.errors import answer_error
from authgate.entrypoints.http.common.renewal import renewal_hook
from authgate.entrypoints.http.common.session_auth import (
    SameOriginGuard,
    SessionVerifier,
    session_cookie_scheme,
)
from authgate.entrypoints.http.openid.jwks import JwksOperations
from authgate.entrypoints.http.signin import SignInOperations
from authgate.entrypoints.resources import (
    Resources,
    check_settings,
    open_resources,
    unopened_resources,
)
from authgate.entrypoints.rest import Api, BearerJWT, Cors, RecordRequest
from authgate.entrypoints.startup import StartupError
from authgate.entrypoints.wiring import (
    OpenIdServices,
    Services,
    build_services,
    receiver_routes,
)
from authgate.ports.clock import Clock
from authgate.services.outbox import OutboxWorker
from authgate.services.sessions import SessionService

# The metrics libraries are imported only when metrics are on (by open_resources).
if TYPE_CHECKING:
    from authgate.adapters.metrics import ServiceMetrics

log = logging.getLogger("authgate")

TITLE = "authgate"

RESOURCES = web.AppKey("authgate.resources", Resources)


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
    if services.passkeys is not None:
        from authgate.entrypoints.http.passkeys import PasskeyOperations

        PasskeyOperations(
            services.passkeys,
            bearer,
            cookie,
            guard,
            client_address,
            resources.passkey_limiter,
            binding_max_age=config.state.ttl_seconds,
            cors=cors,
        ).register(api)
    if services.openid is not None:
        from authgate.entrypoints.http.openid.discovery import (
            DiscoveryOperations,
            provider_metadata,
        )

        DiscoveryOperations(provider_metadata(config)).register(api)
        _register_openid_flow(
            api, config, resources, services.openid, services.sessions, guard, client_address
        )
        from authgate.entrypoints.http.openid.end_session import LogoutOperations

        LogoutOperations(
            services.openid.end_session,
            services.sessions,
            client_address,
            guard,
            resources.openid_limits.logout,
        ).register(api)
    if services.openid is not None and services.openid_resource is not None:
        from authgate.entrypoints.http.openid.apps import AppOperations
        from authgate.entrypoints.http.openid.cors import public_client_cors
        from authgate.entrypoints.http.openid.resource import ResourceOperations

        ResourceOperations(
            services.openid_resource.access,
            services.openid.clients,
            services.openid.client_auth,
            public_client_cors(services.openid.clients),
            resources.introspection_limiter,
            resources.openid_limits.userinfo,
            client_address,
        ).register(api)
        AppOperations(
            services.openid_resource.apps, bearer, cookie, guard, client_address, cors
        ).register(api)
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


def _register_openid_flow(
    api: Api,
    config: Config,
    resources: Resources,
    openid: OpenIdServices,
    sessions: SessionService,
    guard: SameOriginGuard,
    client_address: ClientAddress,
) -> None:
    """The code flow's endpoints: authorize (with its sign-in and consent pages) and token,
    behind their rate limits. The sign-in page starts each provider's sign-in with its
    callback URL on the issuer's origin (else its first)."""
    from authgate.entrypoints.http.openid.authorize import AuthorizeOperations, SignInStart
    from authgate.entrypoints.http.openid.cors import public_client_cors
    from authgate.entrypoints.http.openid.token import TokenLimits, TokenOperations

    issuer = openid.signer.issuer
    callbacks = {}
    for name in resources.providers or config.providers:
        urls = callback_urls_of(config, name)
        own = [u for u in urls if origin(u) == origin(issuer)]
        if urls:
            callbacks[name] = (own or urls)[0]
    limits = resources.openid_limits
    AuthorizeOperations(
        openid.authorization,
        sessions,
        guard,
        SignInStart(
            issuer,
            callbacks,
            proving=frozenset(
                name for name, provider in resources.providers.items() if provider.proves_login_time
            ),
        ),
        # Only where a browser would run the ceremony: the page's origin (the issuer's) is one
        # of the passkey origins (and so under the RP ID).
        passkeys=config.passkeys.enabled and origin(issuer) in passkey_origins(config),
        limiter=limits.authorize,
        client_address=client_address,
    ).register(api)
    TokenOperations(
        openid.tokens,
        openid.client_auth,
        TokenLimits(
            client=limits.token_client,
            public_client=limits.token_public_client,
            address=limits.token_address,
            failures=limits.token_failures,
        ),
        client_address,
        cors=public_client_cors(openid.clients),
    ).register(api)


def document(config: Config) -> dict[str, Any]:
    """The OpenAPI document, built without opening any resource."""
    return build_api(config, unopened_resources(config)).openapi()


def check(config: Config) -> None:
    """Everything :func:`create_app` refuses in the configuration before it opens anything,
    as a :class:`StartupError`: ``serve`` runs it first, and ``authgate config check`` runs
    the same, so that a configuration the check passes is not refused by ``serve`` for any of
    these reasons."""
    check_settings(config)
    development.check(config)


async def create_app(
    config: Config,
    build: Callable[[Api, Config], web.Application],
    clock: Clock | None = None,
) -> web.Application:
    """Open the resources and build the application that closes them on shutdown."""
    check(config)
    if not config.state.require_binding_cookie:
        log.warning(
            "state.require_binding_cookie is false: callbacks without the binding cookie are "
            "admitted, so login-CSRF protection is off (an attacker can sign a victim in to "
            "the attacker's account)"
        )
    # The dev Apple key file, before the adapter reads it (once the database was accepted).
    resources = await open_resources(config, clock, prepare=development.prepare)
    try:
        services = build_services(config, resources)
        api = build_api(config, resources, services)
        # Renews a browser's session cookie on a successful answer (sliding sessions), and
        # with metrics on, records each request's duration: the API's hooks, in its error
        # handling.
        api.after_response(renewal_hook(services.sessions))
        record = _request_recorder(config, resources)
        if record is not None:
            api.record_requests(record)
        app = build(api, config)
        app[RESOURCES] = resources  # for diagnostics and tests that look behind the HTTP API
        development.mount(app, config)  # /docs; /demo and /dev/idp in development
    except BaseException:
        # The application that would close them never runs: an open connection (the
        # revocation channel's) would keep the refusing process from ending.
        await resources.close()
        raise
    if config.metrics.enabled:
        from authgate.adapters.metrics import ServiceMetrics  # imported by open_resources then

        if isinstance(resources.metrics, ServiceMetrics):
            try:
                await _mount_metrics(app, config, resources.metrics)
            except BaseException:
                await resources.close()  # the application that would close them never runs
                raise

    # The outboxes' workers: provider-token revocations, and back-channel logouts.
    workers: list[OutboxWorker[Any]] = [services.revocation_worker]
    if services.openid is not None:
        workers.append(services.openid.logout.worker)

    async def start_worker(_: web.Application) -> None:
        for worker in workers:
            worker.start()

    async def close(_: web.Application) -> None:
        for worker in workers:
            await worker.stop()
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
        log.info("metrics at /metrics on the API's listener (metrics.port is null)")
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

    log.info("metrics at http://%s:%s/metrics", f"[{host}]" if ":" in host else host, port)

    async def stop(_: web.Application) -> None:
        await runner.cleanup()

    app.on_cleanup.append(stop)
