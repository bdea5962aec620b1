"""What every face shares: the service's key set and session tokens, the clock, the metrics,
the HTTP client of the upstream calls, the provider tokens' sealer, and at the HTTP edge the
session verifier, the security schemes, the same-origin guard, CORS and the client address.

The metrics libraries are imported only when ``metrics.enabled``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
from typing import TYPE_CHECKING

import aiohttp
import attrs
from aiohttp import web
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
from authgate.domain.redirects import origin
from authgate.domain.scopes import ACCOUNT_MANAGE
from authgate.entrypoints.app.config import Config, StartupError, provider_on
from authgate.entrypoints.app.stores import Closers
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.session_auth import (
    SameOriginGuard,
    SessionVerifier,
    session_cookie_scheme,
)
from authgate.entrypoints.rest import BearerJWT, Cors
from authgate.entrypoints.rest.security import ApiKey
from authgate.ports.clock import Clock
from authgate.ports.metrics import Metrics, NoMetrics
from authgate.ports.provider_tokens import TokenSealer
from authgate.services.sessions import SessionService

if TYPE_CHECKING:
    from authgate.adapters.metrics import ServiceMetrics

log = logging.getLogger("authgate")


@attrs.frozen
class Shared:
    """The parts every face uses, opened once."""

    clock: Clock
    keys: KeySet
    session_tokens: JwtSessionTokens
    http: aiohttp.ClientSession | None  # None: nothing is fetched (the OpenAPI document)
    metrics: Metrics = attrs.field(factory=NoMetrics)
    served: ServiceMetrics | None = None  # the same metrics, recorded and served when on
    sealer: TokenSealer | None = None  # None: no provider_tokens.keys, no token is kept


def open_shared(config: Config, clock: Clock | None, closers: Closers) -> Shared:
    """The key set (made on a first start when ``session.generate_keys`` allows), the session
    tokens, the HTTP client and the metrics; each closer is added to ``closers``. The key
    set holds the session key, and an RSA key when clients are registered (their ID and
    access tokens)."""
    session = config.session
    try:
        keys = load_or_create_keys(
            session.keys_file, session.generate_keys, rsa=provider_on(config)
        )
    except SessionKeyError as e:
        raise StartupError(str(e)) from None
    http = provider_session()
    closers.append(http.close)
    metrics = _metrics(config, closers)
    return Shared(
        clock=clock or SystemClock(),
        keys=keys,
        session_tokens=JwtSessionTokens(
            keys,
            issuer=session.issuer,
            audience=session.audience,
            ttl=dt.timedelta(seconds=session.ttl_seconds),
        ),
        http=http,
        metrics=metrics or NoMetrics(),
        served=metrics,
        sealer=sealer(config),
    )


def unopened_shared(config: Config) -> Shared:
    """Shared parts that open nothing (ephemeral keys, no HTTP client): for the document."""
    keys = ephemeral_keys(rsa=provider_on(config))
    tokens = JwtSessionTokens(
        keys, issuer="document", audience="document", ttl=dt.timedelta(seconds=1)
    )
    return Shared(clock=SystemClock(), keys=keys, session_tokens=tokens, http=None)


def sealer(config: Config) -> TokenSealer | None:
    """The sealer of ``provider_tokens.keys`` (checked by the configuration), or None."""
    try:
        keys = [SealingKey.from_text(k.id, k.secret) for k in config.provider_tokens.keys]
    except SealingKeyError as e:
        raise StartupError(f"provider_tokens.keys: {e}") from None
    if not keys:
        return None  # ProviderTokenService warns once a provider hands out a token to keep
    return JweTokenSealer(keys)


def _metrics(config: Config, closers: Closers) -> ServiceMetrics | None:
    """The service's metrics when ``metrics.enabled`` (shut down with the resources)."""
    if not config.metrics.enabled:
        return None
    from authgate.adapters.metrics import ServiceMetrics  # prometheus_client: only when on

    metrics = ServiceMetrics(config.otel.service.name)

    async def shutdown() -> None:
        # The last OTLP export may wait on a collector that does not answer: off the loop.
        await asyncio.to_thread(metrics.shutdown)

    closers.append(shutdown)
    return metrics


@attrs.frozen
class Edge:
    """The HTTP edge every face's operations stand behind."""

    verifier: SessionVerifier
    bearer: BearerJWT
    cookie: ApiKey
    manage: tuple[BearerJWT, ApiKey]  # bearer or cookie, with the account:manage scope
    guard: SameOriginGuard
    cors: Cors
    client_address: ClientAddress


def edge(config: Config, sessions: SessionService) -> Edge:
    """The application's pages (app.allowed_origins) may read the account and make changes
    with the session cookie from their own origin: CORS with credentials, and the CSRF
    guard. Pages of any other origin are refused, also when no origin is allowed."""
    verifier = SessionVerifier(sessions)
    bearer = BearerJWT("bearerAuth", verifier)
    cookie = session_cookie_scheme(verifier)
    allowed = config.app.allowed_origins
    public_url = config.rest.public_url
    own = [origin(public_url)] if public_url else []
    return Edge(
        verifier=verifier,
        bearer=bearer,
        cookie=cookie,
        manage=(bearer.with_scopes(ACCOUNT_MANAGE), cookie.with_scopes(ACCOUNT_MANAGE)),
        guard=SameOriginGuard(own, allowed),
        cors=Cors(allowed, expose_headers=("WWW-Authenticate",), own_origins=own),
        client_address=ClientAddress(
            config.ratelimit.trusted_proxies, config.ratelimit.ipv6_prefix
        ),
    )


async def mount_metrics(app: web.Application, config: Config, shared: Shared) -> None:
    """``GET /metrics`` in the Prometheus text format: alone on ``metrics.host``:
    ``metrics.port`` (loopback by default: the API's port does not serve it), or on the main
    listener when ``metrics.port`` is null. Not an API operation: it is not in the OpenAPI
    document. Its own listener is bound now, not as the application starts: a taken port is
    then a :class:`StartupError` of one line (aiohttp cleans nothing up after a failed start)."""
    metrics = shared.served
    if metrics is None:
        return

    async def scrape(_: web.Request) -> web.Response:
        # A snapshot of this moment: no cache may keep it (and no session cookie rides on it).
        return web.Response(
            body=metrics.exposition(),
            headers={"Content-Type": metrics.content_type, "Cache-Control": "no-store"},
        )

    if config.metrics.port is None:
        app.router.add_get("/metrics", scrape)
        log.info("metrics at /metrics on the API's listener (metrics.port is null)")
        return
    host, port = config.metrics.host, config.metrics.port
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
    app.on_cleanup.append(lambda _: runner.cleanup())
