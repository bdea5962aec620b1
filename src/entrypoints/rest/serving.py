"""Serving an :class:`~.api.Api`: logging, tracing, graceful shutdown on SIGTERM/SIGINT; an
application maps its own settings onto :class:`ServerSettings`.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Awaitable, Callable

import attrs
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from opentelemetry import trace

from .accesslog import AccessLogger, install_service_handler
from .api import Api
from .eventloop import EventLoop, default_event_loop, new_event_loop, running_loop_name
from .tracing import make_tracer_provider

log = logging.getLogger("authgate")


@attrs.frozen
class ServerSettings:
    """Where and how to serve.

    ``tracing``: a server span per request, exported as the ``OTEL_EXPORTER_OTLP_*`` variables
    say. ``reuse_port``: bind with ``SO_REUSEPORT``, so that worker processes share the port.
    ``name``: how the log lines name this server. ``repeat_stops_at_once``: a second signal ends
    the graceful stop; a worker leaves that to its parent, since a service manager may signal
    every process of the service as well as the parent, which passes the signal on.
    """

    port: int
    host: str = "127.0.0.1"
    shutdown_timeout_seconds: float = 30.0
    access_log: bool = True
    tracing: bool = False
    service_name: str = "authgate"
    event_loop: EventLoop = attrs.field(factory=default_event_loop)
    reuse_port: bool = False
    name: str = "authgate"
    repeat_stops_at_once: bool = True


class MalformedRequestFilter(logging.Filter):
    """aiohttp logs every malformed HTTP request it refuses with 400 as an ERROR with a
    traceback, so any client could fill the log. Such a record becomes one INFO line naming
    the kind of error (not its text, which may quote the request's bytes)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg = "malformed HTTP request from %s refused: %s"
            record.args = (remote, type(exc).__name__)
            record.exc_info = record.exc_text = None
            record.levelno = logging.INFO
            record.levelname = logging.getLevelName(logging.INFO)
        return True


def configure_logging(level: int = logging.INFO) -> None:
    """Log to stderr, aiohttp's malformed-request tracebacks as one INFO line."""
    install_service_handler(level)
    logging.getLogger("aiohttp.server").addFilter(MalformedRequestFilter())


def build_app(api: Api, settings: ServerSettings) -> web.Application:
    """The aiohttp application of an API, traced when ``settings.tracing``."""
    tracer = None
    if settings.tracing:
        provider = make_tracer_provider(settings.service_name)
        trace.set_tracer_provider(provider)
        tracer = provider.get_tracer("authgate")
    return api.app(tracer=tracer)


def serve(
    app: web.Application | Awaitable[web.Application],
    settings: ServerSettings,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, then stop accepting and let in-flight requests finish."""
    address = f"http://{settings.host}:{settings.port}"
    loop = new_event_loop(settings.event_loop)
    stopping: list[float] = []
    # Ours instead of aiohttp's (handle_signals=False), which say nothing.
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, _stop, settings, stopping, signum)

    def announce(*_: object) -> None:
        # The loop named as it runs (run_app calls this from inside it), not as configured.
        log.info(
            "%s listening on %s (OpenAPI at %s/openapi.json; event loop %s)",
            settings.name,
            address,
            address,
            running_loop_name(),
        )
        if on_ready is not None:
            on_ready(address)

    web.run_app(
        app,
        host=settings.host,
        port=settings.port,
        reuse_port=settings.reuse_port or None,
        shutdown_timeout=settings.shutdown_timeout_seconds,
        access_log_class=AccessLogger,
        # None turns access logging off (rest.access_log: false).
        access_log=logging.getLogger("authgate.access") if settings.access_log else None,
        print=announce,
        handle_signals=False,
        loop=loop,
    )
    if stopping:
        log.info("%s stopped in %.3f s", settings.name, time.monotonic() - stopping[0])


def _stop(settings: ServerSettings, stopping: list[float], signum: signal.Signals) -> None:
    """The first signal starts the graceful stop (``repeat_stops_at_once``: a second one)."""
    if not stopping:
        stopping.append(time.monotonic())
        log.info(
            "%s stopping (%s): no new connections; requests in flight may finish within %g s",
            settings.name,
            signum.name,
            settings.shutdown_timeout_seconds,
        )
    elif not settings.repeat_stops_at_once:
        return  # already stopping, within the bound its parent enforces
    else:  # as aiohttp's own handler
        log.warning("%s stopping at once (%s again)", settings.name, signum.name)
    raise web.GracefulExit()
