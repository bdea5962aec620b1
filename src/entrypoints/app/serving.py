"""The service's settings onto the generic server of :mod:`authgate.entrypoints.rest.serving`."""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable

import attrs
from aiohttp import web

from authgate.entrypoints.app.config import Config, StartupError
from authgate.entrypoints.app.workers import worker_name
from authgate.entrypoints.rest import Api, serving


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
    ``worker``: as one of the worker processes of :mod:`authgate.entrypoints.app.workers`."""
    serving.serve(app, server_settings(config, worker), on_ready)


def check_listeners(
    config: Config,
    worker: int | None = None,
    variable_of: Callable[[str], str | None] = lambda _: None,
) -> None:
    """Refuse, as a :class:`StartupError` naming the setting or the environment variable it
    is read from (``variable_of``), an address ``rest.port`` or ``metrics.port`` cannot listen
    on, before the application is built: the error then comes before the lines that say where
    the service would be. The listeners themselves are bound later; this only tries."""
    listeners = [("rest.port", config.rest.host, config.rest.port, worker is not None, "")]
    if config.metrics.enabled and config.metrics.port is not None:
        also = ", or metrics.enabled: false"
        listeners.append(("metrics.port", config.metrics.host, config.metrics.port, False, also))
    for setting, host, port, reuse_port, also in listeners:
        try:
            _try_to_bind(host, port, reuse_port)
        except OSError as e:
            reason = os.strerror(e.errno) if e.errno else str(e)
            variable = variable_of(setting)
            change = (
                f"set {variable}, which {setting} is read from, to another port"
                if variable
                else f"choose another {setting}"
            )
            raise StartupError(
                f"{setting}: cannot listen on {host}:{port}: {reason} ({change}{also})"
            ) from None


def _try_to_bind(host: str, port: int, reuse_port: bool) -> None:
    """Bind (and release) each address ``host`` names, with the options asyncio's server
    sets (SO_REUSEADDR; IPv6 only on an IPv6 socket), and SO_REUSEPORT as a worker binds."""
    try:
        addresses = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror:
        return  # the server's own bind says what is wrong with the host
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            probe.bind(address)
