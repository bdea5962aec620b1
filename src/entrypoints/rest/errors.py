"""Errors an operation (or the layer itself) answers with, their JSON rendering, and the
middleware that turns every failure of a request (router errors included) into such JSON."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

import attrs
from aiohttp import web
from aiohttp.typedefs import Middleware
from opentelemetry import trace

from .logtext import REQUEST_STARTED, log_safe
from .routing import static_methods

log = logging.getLogger("authgate.rest")

JSON_CONTENT_TYPE = "application/json"


# One encoder for every body: compact, UTF-8 as it is (no \u escapes of non-ASCII text).
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
    """An answer other than success: a status, a JSON body and optional headers.

    Raising it from an operation (or a validator, or a security scheme) stops the request with
    exactly this response; it is an expected outcome, so it is not logged as a failure.
    """

    def __init__(
        self,
        status: int,
        body: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status, dict(body))
        self.status = status
        self.body: dict[str, Any] = dict(body)
        self.headers: dict[str, str] = dict(headers or {})

    def response(self) -> web.Response:
        return json_response(self.body, self.status, self.headers)


def layer_error(status: int, text: str, headers: Mapping[str, str] | None = None) -> HttpError:
    """An error of the generic layer: the body is ``{"error": text}`` (spec 2.6)."""
    return HttpError(status, {"error": text}, headers)


@attrs.frozen
class ErrorBody:
    """The documented shape of every error answer: a code or text, and an optional message."""

    error: str
    message: str | None = None


_GENERIC_500 = {"error": "internal_error", "message": "An unexpected error occurred."}


@web.middleware
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Turns router errors and unexpected exceptions into JSON; logs the latter in full."""
    try:
        return await handler(request)
    except Exception as e:
        return _failure_answer(request, e)


# (method, route template or None, status, seconds)
RecordRequest = Callable[[str, str | None, int, float], None]
# After a successful answer: None when there is nothing to do, else what to await.
AfterSuccess = Callable[[web.Request, web.StreamResponse], Awaitable[None] | None]


Dispatch = Callable[[web.Request], Awaitable[web.StreamResponse]]


def error_middleware_with(
    *,
    after: AfterSuccess | None = None,
    record: RecordRequest | None = None,
    handler: Dispatch | None = None,
) -> Middleware:
    """:func:`error_middleware` with up to two more middlewares folded in, one coroutine frame
    instead of three per request (issue 13, docs/benchmarks.md):

    ``after`` runs as an innermost middleware would: on a successful answer of the handler
    (none when it raised), before the error handling; ``record`` as an outermost one: each
    request's method, route template, final status (that of the exception that escapes, 500
    for one that is not an HTTP answer) and duration, never the concrete path or query.

    ``handler``: the handler when the middleware is called with the request alone, as an
    application's own dispatch is (see :func:`error_handler`)."""
    dispatch: Dispatch = handler if handler is not None else _no_handler
    clock = time.perf_counter
    if record is None:

        @web.middleware
        async def handle_and_after(
            request: web.Request, handler: Dispatch = dispatch
        ) -> web.StreamResponse:
            request[REQUEST_STARTED] = clock()
            try:
                response = await handler(request)
            except Exception as e:
                return _failure_answer(request, e)
            if after is not None:
                pending = after(request, response)
                if pending is not None:
                    await pending
            return response

        return handle_and_after

    @web.middleware
    async def handle(request: web.Request, handler: Dispatch = dispatch) -> web.StreamResponse:
        started = request[REQUEST_STARTED] = clock()
        status = 500  # an exception that is not an HTTP answer ends as a 500
        try:
            try:
                response = await handler(request)
            except Exception as e:
                response = _failure_answer(request, e)
            else:
                if after is not None:
                    pending = after(request, response)
                    if pending is not None:
                        await pending
            status = response.status
            return response
        except web.HTTPException as e:
            status = e.status
            raise
        finally:
            # The application's own error handling runs around the routing: a request that
            # failed before it (none does in aiohttp 3.14) would have no match.
            info = request.match_info
            resource = info.route.resource if info is not None else None
            route = resource.canonical if resource is not None else None
            record(request.method, route, status, clock() - started)

    return handle


def error_handler(
    dispatch: Dispatch, *, after: AfterSuccess | None = None, record: RecordRequest | None = None
) -> Dispatch:
    """``dispatch`` (an application's routing and handlers) inside the error handling of
    :func:`error_middleware_with`: one coroutine per request, the middleware's own."""
    return cast(Dispatch, error_middleware_with(after=after, record=record, handler=dispatch))


async def _no_handler(request: web.Request) -> web.StreamResponse:
    raise TypeError("a middleware is called with its handler")


def _failure_answer(request: web.Request, e: Exception) -> web.StreamResponse:
    """The answer to an exception from a handler; called inside the ``except`` clause (the
    logged traceback is the exception's), it re-raises the HTTP exceptions that are not
    failures (redirects)."""
    if isinstance(e, HttpError):
        return e.response()
    if isinstance(e, web.HTTPRequestEntityTooLarge):
        # request.read() past client_max_size (a chunked body): the same answer as a too-large
        # Content-Length gets from the operation.
        limit = request.client_max_size
        return layer_error(413, f"request body larger than {limit} bytes").response()
    if isinstance(e, web.HTTPException):
        if e.status < 400:
            raise e
        if e.status == 405:
            # aiohttp's Allow joins every matching route's methods, templated siblings too
            allowed = static_methods(request)
            if allowed is not None:
                e = web.HTTPMethodNotAllowed(request.method, allowed)
        return _http_exception_json(e)
    # The request's values escaped: the path is decoded and may hold a newline.
    log.exception(
        "unhandled error in %s %s%s",
        log_safe(request.method),
        log_safe(request.path),
        _trace_suffix(),
    )
    return json_response(_GENERIC_500, 500)


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
