"""Running the HTTP server: logging, tracing, graceful shutdown on SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import HttpProcessingError
from opentelemetry import trace

from authgate.entrypoints.config import Config
from authgate.entrypoints.rest import Api, log_safe
from authgate.entrypoints.rest.tracing import make_tracer_provider, tracing_middleware

log = logging.getLogger("authgate")


class AccessLogger(AbstractAccessLogger):
    """One line per request: method, path (never the query string: it carries codes and
    states), status, duration. No headers, so no credentials. The request's values are
    :func:`log_safe`: a decoded ``%0A`` in a path cannot start a forged line."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        remote = request.remote
        self.logger.info(
            "%s %s %s %d %.1fms",
            log_safe(remote) if remote is not None else None,
            log_safe(request.method),
            log_safe(request.path),
            response.status,
            time * 1000,
        )


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
            record.exc_info = None
            record.exc_text = None
            record.levelno = logging.INFO
            record.levelname = logging.getLevelName(logging.INFO)
        return True


def configure_logging(level: int = logging.INFO) -> None:
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    logging.getLogger("aiohttp.server").addFilter(MalformedRequestFilter())


def build_app(api: Api, config: Config) -> web.Application:
    """The aiohttp application of an API, with tracing unless ``otel.sdk.disabled``."""
    middlewares = []
    if not config.otel.sdk.disabled:
        provider = make_tracer_provider(config.otel.service.name)
        trace.set_tracer_provider(provider)
        middlewares.append(tracing_middleware(provider.get_tracer("authgate")))
    return api.app(middlewares=middlewares)


def serve(
    app: web.Application | Awaitable[web.Application],
    config: Config,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM; then stop accepting and let in-flight requests finish."""
    address = f"http://{config.rest.host}:{config.rest.port}"

    def announce(*_: object) -> None:
        log.info("authgate listening on %s (OpenAPI at %s/openapi.json)", address, address)
        if on_ready is not None:
            on_ready(address)

    web.run_app(
        app,
        host=config.rest.host,
        port=config.rest.port,
        shutdown_timeout=config.rest.shutdown_timeout_seconds,
        access_log_class=AccessLogger,
        # None turns access logging off (rest.access_log: false): a line costs ~40 µs of CPU.
        access_log=logging.getLogger("authgate.access") if config.rest.access_log else None,
        print=announce,
        handle_signals=True,
    )
