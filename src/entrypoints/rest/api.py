"""An API: registered operations, assembled into an aiohttp application."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Unpack

import attrs
import cattrs
from aiohttp import web
from opentelemetry import trace

from .call import Handler
from .cors import CORS_OPERATION, Cors
from .errors import (
    JSON_CONTENT_TYPE,
    AfterSuccess,
    ExceptionHandler,
    RecordRequest,
    RouteHandler,
    add_routes,
    error_middleware,
    json_text,
)
from .health import Probe
from .openapi import document
from .operation import Invoker, Operation, OperationOptions
from .params import Location, Param, header, pattern, required
from .tracing import tracing_middleware
from .wire import make_converter

Route = tuple[str, str, RouteHandler]
"""(method, path template, handler)."""

API_VERSION_HEADER = header("API-Version", required, pattern(r"^v\d+$"))
"""The header scheme of versioning (spec 9.3): declare it once, reuse it on operations."""


@attrs.frozen
class Group:
    """Operations sharing a path prefix and leading parameters (a version, say)."""

    api: Api
    prefix: str = ""
    params: tuple[Param, ...] = ()

    def operation(
        self, method: str, path: str, **options: Unpack[OperationOptions]
    ) -> Callable[[Handler], Handler]:
        """:meth:`Api.operation` under this group's prefix, after its parameters."""
        options["params"] = (*self.params, *options.get("params", ()))
        return self.api.operation(method, self.prefix + path, **options)


class Api:
    """A titled, versioned set of operations served over aiohttp.

    >>> api = Api("Example", "1.0.0")
    >>> @api.operation("GET", "/users/{id}", params=[path("id", pattern(r"^\\d+$"))], response=User)
    ... async def get_user(call: Call[None]) -> User: ...
    """

    def __init__(self, title: str, version: str, *, max_body_bytes: int = 1 << 20) -> None:
        self.title = title
        self.version = version
        self.max_body_bytes = max_body_bytes
        self.operations: list[Operation] = []
        self.liveness = Probe()
        self.readiness = Probe()
        self.converter: cattrs.Converter = make_converter()
        # The document's top-level tag list: name -> description, in declaration order.
        self.tags: dict[str, str] = {}
        self.exception_handler: ExceptionHandler | None = None
        self.after_success: AfterSuccess | None = None
        self.recorder: RecordRequest | None = None

    def on_exception(self, handler: ExceptionHandler) -> ExceptionHandler:
        """Answer an operation's exception that is not an HTTP answer (a domain error) by
        ``handler``: a response, or None for an unexpected failure (a logged JSON 500)."""
        self.exception_handler = handler
        return handler

    def after_response(self, hook: AfterSuccess) -> AfterSuccess:
        """Run ``hook`` on every successful answer before it is sent (it may add headers or
        cookies; what it returns, if not None, is awaited)."""
        self.after_success = hook
        return hook

    def record_requests(self, record: RecordRequest) -> RecordRequest:
        """Give ``record`` each request's method, route template (or None), status and seconds."""
        self.recorder = record
        return record

    def group(self, prefix: str = "", params: Iterable[Param] = ()) -> Group:
        """A view of this API that prefixes paths and prepends parameters."""
        return Group(self, prefix, tuple(params))

    def operation(
        self, method: str, path: str, **options: Unpack[OperationOptions]
    ) -> Callable[[Handler], Handler]:
        """Register the decorated coroutine as an operation (:class:`Operation`'s fields).

        ``security``: the accepted schemes, the first whose credential is present being used;
        without ``security_optional`` a request with none of them is refused (401), with it the
        operation runs with ``call.principal`` None.
        """

        def register(handler: Handler) -> Handler:
            self.add(Operation(method=method, path=path, handler=handler, **options))
            return handler

        return register

    def add(self, op: Operation) -> None:
        """Register an operation: ValueError for a method and path or a parameter declared
        twice, TypeError for a handler whose annotations contradict the declared types."""
        for other in self.operations:
            if other.method == op.method and other.path == op.path:
                raise ValueError(f"{op.method} {op.path} is registered twice")
            # One preflight answers for every method of a path: one CORS policy per path.
            both = op.cors is not None and other.cors is not None
            if other.path == op.path and both and op.cors != other.cors:
                raise ValueError(f"{op.path}: its operations declare different CORS policies")
        # A parameter declared twice (by a group and again by the operation, say) would make
        # the OpenAPI document invalid; header names are case-insensitive.
        declared: set[tuple[Location, str]] = set()
        for p in op.params:
            key = (p.location, p.name.lower() if p.location is Location.HEADER else p.name)
            if key in declared:
                where = f"{op.method} {op.path}: {p.location.value} parameter"
                raise ValueError(f"{where} {p.name} is declared twice")
            declared.add(key)
        op.check_handler()
        self.operations.append(op)

    def describe_tag(self, name: str, description: str) -> None:
        """Describe a tag of operations (the document's top-level ``tags``, /docs' groups)."""
        self.tags[name] = description

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI 3.0 document of this API (spec 2.9)."""
        return document(self.title, self.version, self.operations, self.tags)

    def app(
        self, *, middlewares: Iterable[Any] = (), tracer: trace.Tracer | None = None
    ) -> web.Application:
        """A fresh aiohttp application serving the operations and the built-in endpoints; its
        middlewares, outermost first: the server span with ``tracer``, ``middlewares``, the error
        handling."""
        errors = error_middleware(
            exception_handler=self.exception_handler, after=self.after_success, record=self.recorder
        )
        tracing = [tracing_middleware(tracer)] if tracer is not None else []
        app = web.Application(
            middlewares=[*tracing, *middlewares, errors], client_max_size=self.max_body_bytes
        )
        routes, preflights = self._routes()
        # aiohttp names its own and Python's exact versions in a Server header: a free lookup
        # of known vulnerabilities for whoever scans the service. Every response goes through
        # this signal; one receiver, not two: each costs a coroutine per response.
        app.on_response_prepare.append(
            _drop_server_header_add_cors if preflights else _drop_server_header
        )
        app.router.add_get("/openapi.json", _document_handler(self.openapi))
        app.router.add_get("/health/liveness", self.liveness.respond)
        app.router.add_get("/health/readiness", self.readiness.respond)
        add_routes(app, [*routes, *preflights])
        return app

    def _routes(self) -> tuple[list[Route], list[Route]]:
        """The operations' routes, and a CORS preflight route per path with CORS."""
        # The bound coroutine method, not the Invoker: aiohttp wraps (and warns about) any
        # handler that is not a coroutine function.
        routes: list[Route] = []
        cors_paths: dict[str, tuple[Cors, list[str]]] = {}
        for op in self.operations:
            handler = Invoker(op, self.converter, self.max_body_bytes).__call__
            routes.append((op.method, op.path, handler))  # the Invoker admits CORS requests
            if op.cors is not None:
                cors_paths.setdefault(op.path, (op.cors, []))[1].append(op.method)
        preflights: list[Route] = [
            ("OPTIONS", path, cors.preflight(methods))
            for path, (cors, methods) in cors_paths.items()
        ]
        return routes, preflights


def _document_handler(make: Callable[[], dict[str, Any]]) -> RouteHandler:
    """The handler of ``/openapi.json``, its text written at the first request and kept: it does
    not change while the application runs (made at start, its dictionaries' memory would stay
    in the idle process's heap)."""
    text: list[bytes] = []

    async def openapi_json(_: web.Request) -> web.StreamResponse:
        if not text:
            text.append(json_text(make()).encode())
        # Public, but it changes with each release and configuration: always ask again.
        return web.Response(body=text[0], content_type=JSON_CONTENT_TYPE, headers=_REVALIDATE)

    return openapi_json


_REVALIDATE = {"Cache-Control": "no-cache"}


async def _drop_server_header(_: web.Request, response: web.StreamResponse) -> None:
    # Runs after aiohttp has filled in its default headers, before they are written.
    response.headers.popall("Server", None)


async def _drop_server_header_add_cors(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.popall("Server", None)
    cors = request.get(CORS_OPERATION)
    if cors is not None:
        cors.add_to(request, response)
