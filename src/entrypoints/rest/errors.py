"""Errors an operation (or the layer itself) answers with, their JSON rendering, and the
middleware that turns every failure of a request (router errors included) into such JSON and
runs the application's hooks (:meth:`~.api.Api.on_exception`, :meth:`~.api.Api.after_response`,
:meth:`~.api.Api.record_requests`); and the routes (:func:`add_routes`)."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import attrs
from aiohttp import web
from aiohttp.typedefs import Middleware
from opentelemetry import trace

from .logtext import REQUEST_STARTED, log_safe

log = logging.getLogger("authgate.rest")

JSON_CONTENT_TYPE = "application/json"

RouteHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# One encoder for every body (json.dumps with options makes one per call): compact, UTF-8 as it
# is (no \u escapes of non-ASCII text).
json_text: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A JSON response from an already-unstructured body (dicts, lists, scalars)."""
    return web.Response(
        body=json_text(body).encode(),
        status=status,
        content_type=JSON_CONTENT_TYPE,
        headers=headers,
    )


class HttpError(Exception):
    """An answer other than success (status, JSON body, headers): raised anywhere on a request's
    path, it is exactly the response, and not logged as a failure."""

    def __init__(
        self, status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(status, dict(body))
        self.status = status
        self.body: dict[str, Any] = dict(body)
        self.headers: dict[str, str] = dict(headers or {})

    def response(self) -> web.Response:
        return json_response(self.body, self.status, self.headers)


def layer_error(
    status: int, text: str, message: str | None = None, headers: Mapping[str, str] | None = None
) -> HttpError:
    """An error of the layer: ``{"error": text}``, with a ``message`` when given. A declared
    parameter missing or invalid is in the contract's wording (spec 2.6, 7.3), its message what
    the parameter accepts; any other (a body too large, malformed, of the wrong media type...)
    has a code and a message, the shape of the application's own errors."""
    body = {"error": text} if message is None else {"error": text, "message": message}
    return HttpError(status, body, headers)


@attrs.frozen
class ErrorBody:
    """The documented shape of every error answer: a code or text, and an optional message."""

    error: str
    message: str | None = None


_GENERIC_500 = {"error": "internal_error", "message": "An unexpected error occurred."}


# (method, route template or None, status, seconds)
RecordRequest = Callable[[str, str | None, int, float], None]
# After a successful answer: None when there is nothing to do, else what to await.
AfterSuccess = Callable[[web.Request, web.StreamResponse], Awaitable[None] | None]
# The answer to an exception the layer does not know (an application's domain error), or None
# when it is not one of the application's: then it is a failure, answered 500 and logged.
ExceptionHandler = Callable[[web.Request, Exception], web.StreamResponse | None]


def error_middleware(
    *,
    exception_handler: ExceptionHandler | None = None,
    after: AfterSuccess | None = None,
    record: RecordRequest | None = None,
) -> Middleware:
    """The innermost middleware: every failure of a request (router errors included) answered
    as JSON; the hooks as :class:`~.api.Api` names them (``record`` never gets the concrete path
    or query)."""
    clock = time.perf_counter

    @web.middleware
    async def handle(request: web.Request, handler: RouteHandler) -> web.StreamResponse:
        started = request[REQUEST_STARTED] = clock()
        status = 500  # an exception that is not an HTTP answer ends as a 500
        try:
            try:
                response = await handler(request)
            except Exception as e:
                response = _failure_answer(request, e, exception_handler)
            else:
                if after is not None:
                    pending = after(request, response)
                    if pending is not None:
                        await pending
            status = response.status
            return response
        except web.HTTPException as e:  # a redirect raised by a handler
            status = e.status
            raise
        finally:
            if record is not None:
                resource = request.match_info.route.resource
                route = resource.canonical if resource is not None else None
                record(request.method, route, status, clock() - started)

    return handle


def _failure_answer(
    request: web.Request, e: Exception, exception_handler: ExceptionHandler | None
) -> web.StreamResponse:
    """The answer to a handler's exception, called inside the ``except`` clause (the logged
    traceback is the exception's); HTTP exceptions that are not failures (redirects) re-raised."""
    if isinstance(e, HttpError):
        return e.response()
    if isinstance(e, web.HTTPRequestEntityTooLarge):
        # request.read() past client_max_size (a chunked body): the same answer as a too-large
        # Content-Length gets from the operation.
        return too_large(request.client_max_size).response()
    if isinstance(e, web.HTTPException):
        if e.status < 400:
            raise e
        if e.status == 405:
            # aiohttp's Allow joins every matching route's methods, templated siblings too
            allowed = static_methods(request)
            if allowed is not None:
                e = web.HTTPMethodNotAllowed(request.method, allowed)
        return _http_exception_json(e)
    if exception_handler is not None:
        answer = exception_handler(request, e)
        if answer is not None:
            return answer
    # The request's values escaped: the path is decoded and may hold a newline.
    log.exception(
        "unhandled error in %s %s%s",
        log_safe(request.method),
        log_safe(request.path),
        _trace_suffix(),
    )
    return json_response(_GENERIC_500, 500)


def too_large(limit: int) -> HttpError:
    """413: a body past the operation's (or the application's) limit."""
    return layer_error(413, "payload_too_large", f"request body larger than {limit} bytes")


_ROUTER_ERRORS = {
    404: ("not_found", "no such resource"),
    405: ("method_not_allowed", "method not allowed on this resource"),
}


def _http_exception_json(e: web.HTTPException) -> web.Response:
    code, message = _ROUTER_ERRORS.get(e.status, ("http_error", e.reason))
    # Keep what the exception says (Allow, Retry-After, WWW-Authenticate…), not its text body.
    headers = {k: v for k, v in e.headers.items() if k.lower() not in _BODY_HEADERS}
    return json_response({"error": code, "message": message}, e.status, headers)


_BODY_HEADERS = frozenset({"content-type", "content-length", "content-encoding"})


def _trace_suffix() -> str:
    ctx = trace.get_current_span().get_span_context()
    return f" (trace_id={ctx.trace_id:032x})" if ctx.is_valid else ""


# Routes with OpenAPI's precedence: the URL of a static path (``/v1/auth/logout``) is that
# path's resource alone, not also a value of a templated sibling (``/v1/auth/{provider}``), so
# its other methods answer 405 with its own ``Allow`` (aiohttp's joins every match's methods).
_STATIC_METHODS = web.AppKey("authgate_static_methods", dict[str, set[str]])


def add_routes(app: web.Application, routes: Iterable[tuple[str, str, RouteHandler]]) -> None:
    """Add ``(method, path template, handler)`` routes; static paths take precedence."""
    # Static paths first: aiohttp tries resources in registration order, so a method a static
    # path serves (OPTIONS included) is never caught by a templated sibling registered earlier.
    routes = sorted(routes, key=lambda route: "{" in route[1])
    static: dict[str, set[str]] = {}
    for method, path, _ in routes:
        # OPTIONS routes only answer CORS preflights (a plain OPTIONS is refused), so OPTIONS
        # is no method of the resource's Allow.
        if "{" not in path and method.upper() != "OPTIONS":
            static.setdefault(path, set()).add(method.upper())
    app[_STATIC_METHODS] = static
    for method, path, handler in routes:
        shadowed = {p: m for p, m in static.items() if _template_matches(path, p)}
        # No route name: a handler may serve several paths (one per version prefix) and
        # aiohttp refuses duplicate names.
        app.router.add_route(method, path, _off_static(handler, shadowed) if shadowed else handler)


def static_methods(request: web.Request) -> set[str] | None:
    """The methods of the static path the request names, or None if it names none."""
    return request.app.get(_STATIC_METHODS, {}).get(request.path)


def _template_matches(template: str, path: str) -> bool:
    """Whether a concrete path is also a value of a path template (``{x}`` = one segment)."""
    if "{" not in template:
        return False
    pattern = re.sub(r"\\\{[^/]*?\\\}", "[^/]+", re.escape(template))
    return re.fullmatch(pattern, path) is not None


def _off_static(handler: RouteHandler, static: Mapping[str, set[str]]) -> RouteHandler:
    """A templated route's handler that leaves the URLs of static paths alone."""

    async def handle(request: web.Request) -> web.StreamResponse:
        allowed = static.get(request.path)
        if allowed is not None:
            raise web.HTTPMethodNotAllowed(request.method, allowed)
        return await handler(request)

    return handle
