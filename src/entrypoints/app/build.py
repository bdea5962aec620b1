"""The application, the whole story: open the stores and the shared parts, build each face,
mount it on the API, start the workers; close everything on shutdown.

A face whose configuration is absent is not imported: the OpenID Provider's modules only when
clients are registered, the provider events' only when a receiver is configured, the
passkeys' only when they are enabled (the idle memory of the embedded default).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from aiohttp import web

from authgate import __version__
from authgate.entrypoints.app import development, shared, signin, stores
from authgate.entrypoints.app.config import Config, provider_on, receiver_paths
from authgate.entrypoints.app.shared import Shared
from authgate.entrypoints.app.stores import Closers, Stores
from authgate.entrypoints.http.common.errors import answer_error
from authgate.entrypoints.http.common.renewal import renewal_hook
from authgate.entrypoints.rest import Api
from authgate.ports.clock import Clock
from authgate.ports.provider import IdentityProvider
from authgate.services.outbox import OutboxWorker

if TYPE_CHECKING:
    from authgate.entrypoints.app.openid import OpenIdParts
    from authgate.services.openid.backchannel_logout import BackchannelLogout

log = logging.getLogger("authgate")

TITLE = "authgate"


@attrs.frozen
class Resources:
    """What one running application holds (tests look behind the HTTP API through it)."""

    stores: Stores
    shared: Shared
    providers: dict[str, IdentityProvider]
    openid: OpenIdParts | None  # None: no client is registered
    closers: Closers = attrs.field(factory=list)

    async def close(self) -> None:
        """Close what was opened, in reverse order."""
        for close in reversed(self.closers):
            try:
                await close()
            except Exception:
                log.exception("error while closing a resource")


RESOURCES = web.AppKey("authgate.resources", Resources)


async def open_resources(
    config: Config, clock: Clock | None = None, prepare: Callable[[Config], None] | None = None
) -> Resources:
    """Open what the configuration names (the database first: a schema behind is refused
    before any file is made; ``prepare`` then makes what the providers' adapters read, the
    development Apple key); on failure close what was opened and raise."""
    closers: Closers = []
    try:
        opened = await stores.open_stores(config, closers)
        common = shared.open_shared(config, clock, closers)
        if prepare is not None:
            prepare(config)
        assert common.http is not None
        providers = signin.open_providers(config, common.http, common.clock, common.metrics)
        parts = _openid_parts(config, common, opened, closers)
        return Resources(opened, common, providers, parts, closers)
    except BaseException:
        for close in reversed(closers):
            await close()
        raise


def unopened_resources(config: Config) -> Resources:
    """Resources that open nothing (memory stores, ephemeral keys, no provider): enough to
    register the operations on, for the OpenAPI document."""
    common, opened = shared.unopened_shared(config), stores.memory_stores()
    return Resources(opened, common, {}, _openid_parts(config, common, opened))


def _openid_parts(
    config: Config, common: Shared, opened: Stores, closers: Closers | None = None
) -> OpenIdParts | None:
    if not provider_on(config):
        return None
    from authgate.entrypoints.app import openid  # the provider face: only with clients

    return openid.open_parts(config, common, opened, closers)


def build_api(config: Config, resources: Resources) -> tuple[Api, list[OutboxWorker[Any]]]:
    """Every face built and mounted on the API, and the outbox workers to start with it."""
    opened, common, providers = resources.stores, resources.shared, resources.providers
    api = Api(TITLE, __version__, max_body_bytes=config.rest.max_body_bytes)
    api.on_exception(answer_error)  # operations let domain errors propagate; this answers them
    face, logout = signin_face(config, resources)
    edge = shared.edge(config, face.sessions)
    signin.mount(api, config, face, opened, common, edge)
    workers: list[OutboxWorker[Any]] = [face.revocation_worker]
    if config.passkeys.enabled and opened.passkeys is not None:
        from authgate.entrypoints.app import passkeys

        service = passkeys.build(config, opened, opened.passkeys, common, face)
        passkeys.mount(api, config, service, opened, edge)
    if resources.openid is not None and logout is not None:  # the provider face's own parts
        provider = resources.openid.build(logout, opened, common, face.sessions, config)
        provider.mount(api, config, opened, edge, face.sessions, providers)
        workers.append(logout.worker)
    if receiver_paths(config):
        from authgate.entrypoints.app import provider_events

        events = provider_events.build(config, opened, common, providers, face)
        provider_events.mount(api, config, events, opened, common, edge)
    for check in opened.readiness:
        api.readiness.add(check)
    api.after_response(renewal_hook(face.sessions))  # sliding sessions: a renewed cookie
    return api, workers


def signin_face(
    config: Config, resources: Resources
) -> tuple[signin.SignIn, BackchannelLogout | None]:
    """The sign-in face on the opened resources, and the back-channel logout every session's
    end tells when clients are registered (built first: the sessions are built on it)."""
    logout = None
    if resources.openid is not None:
        logout = resources.openid.backchannel(config, resources.stores, resources.shared)
    face = signin.build(config, resources.stores, resources.shared, resources.providers, logout)
    return face, logout


def document(config: Config) -> dict[str, Any]:
    """The OpenAPI document, built without opening any resource."""
    api, _ = build_api(config, unopened_resources(config))
    return api.openapi()


def check(config: Config) -> None:
    """Everything :func:`create_app` refuses in the configuration before it opens anything,
    as a :class:`~authgate.entrypoints.app.config.StartupError`: ``serve`` runs it first, and
    ``authgate config check`` runs the same."""
    stores.check(config)
    shared.sealer(config)
    development.check(config)


async def create_app(
    config: Config, build: Callable[[Api, Config], web.Application], clock: Clock | None = None
) -> web.Application:
    """Open the resources and build the application that closes them on shutdown."""
    check(config)
    if not config.state.require_binding_cookie:
        log.warning(
            "state.require_binding_cookie is false: callbacks without the binding cookie are "
            "admitted, so login-CSRF protection is off (an attacker can sign a victim in to "
            "the attacker's account)"
        )
    resources = await open_resources(config, clock, prepare=development.prepare)
    try:
        api, workers = build_api(config, resources)
        if resources.shared.served is not None:  # each request's duration, for the metrics
            api.record_requests(resources.shared.served.http_request)
        app = build(api, config)
        app[RESOURCES] = resources
        development.mount(app, config)  # /docs; /demo and /dev/idp in development
        await shared.mount_metrics(app, config, resources.shared)
    except BaseException:
        # The application that would close them never runs: an open connection (the
        # revocation channel's) would keep the refusing process from ending.
        await resources.close()
        raise
    _run_with(app, workers, resources)
    return app


def _run_with(app: web.Application, workers: list[OutboxWorker[Any]], resources: Resources) -> None:
    """The outboxes' workers start with the application; they stop, then the resources
    close, with it."""

    async def start(_: web.Application) -> None:
        for worker in workers:
            worker.start()

    async def close(_: web.Application) -> None:
        for worker in workers:
            await worker.stop()
        await resources.close()

    app.on_startup.append(start)
    app.on_cleanup.append(close)
