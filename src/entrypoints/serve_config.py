"""The service's settings onto the generic server of :mod:`authgate.entrypoints.rest.serving`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
from aiohttp import web

from authgate.entrypoints.config import Config
from authgate.entrypoints.rest import Api, serving
from authgate.entrypoints.workers import worker_name


def server_settings(config: Config, worker: int | None = None) -> serving.ServerSettings:
    """The REST and telemetry settings of the configuration, as the server takes them; for
    ``worker`` (one of several processes on ``rest.port``), bound with ``SO_REUSEPORT`` and
    named in its log lines, its parent ending any stop that takes too long."""
    settings = serving.ServerSettings(
        port=config.rest.port,
        host=config.rest.host,
        shutdown_timeout_seconds=config.rest.shutdown_timeout_seconds,
        access_log=config.rest.access_log,
        tracing=not config.otel.sdk.disabled,
        service_name=config.otel.service.name,
        event_loop=config.rest.event_loop,
    )
    if worker is None:
        return settings
    return attrs.evolve(
        settings, reuse_port=True, name=worker_name(worker), repeat_stops_at_once=False
    )


def build_app(api: Api, config: Config) -> web.Application:
    """The aiohttp application of an API, with tracing unless ``otel.sdk.disabled``."""
    return serving.build_app(api, server_settings(config))


def serve(
    app: web.Application | Awaitable[web.Application],
    config: Config,
    on_ready: Callable[[str], None] | None = None,
    worker: int | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, as ``rest.*`` says; in-flight requests may finish.
    ``worker``: as one of the worker processes of :mod:`authgate.entrypoints.workers`."""
    serving.serve(app, server_settings(config, worker), on_ready)
