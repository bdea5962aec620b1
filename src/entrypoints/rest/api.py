"""An API: registered operations, the built-in endpoints and the generated OpenAPI document."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import attrs
import cattrs
from aiohttp import web
from opentelemetry import trace

from .errors import ErrorBody, HttpError, json_response, layer_error
from .health import Probe
from .logtext import log_safe
from .operation import Handler, Invoker, Operation
from .params import Location, Param, header, pattern, required
from .schema import Schema, SchemaBuilder
from .security import SecurityScheme
from .wire import make_converter

log = logging.getLogger("authgate.rest")

OPENAPI_VERSION = "3.0.3"

API_VERSION_HEADER = header("API-Version", required, pattern(r"^v\d+$"))
"""The header scheme of versioning (spec 9.3): declare it once, reuse it on operations."""


@attrs.frozen
class HealthReport:
    status: str
    checks: dict[str, dict[str, str]]


@attrs.frozen
class Group:
    """Operations sharing a path prefix and leading parameters (a version, say)."""

    api: Api
    prefix: str = ""
    params: tuple[Param, ...] = ()

    def operation(
        self, method: str, path: str, *, params: Iterable[Param] = (), **options: Any
    ) -> Callable[[Handler], Handler]:
        return self.api.operation(
            method, self.prefix + path, params=(*self.params, *params), **options
        )


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

    def group(self, prefix: str = "", params: Iterable[Param] = ()) -> Group:
        """A view of this API that prefixes paths and prepends parameters."""
        return Group(self, prefix, tuple(params))

    def operation(
        self,
        method: str,
        path: str,
        *,
        params: Iterable[Param] = (),
        request: type | None = None,
        form: type | None = None,
        response: type | None = None,
        status: int | None = None,
        security: Iterable[SecurityScheme] = (),
        responses: Mapping[int, type | str] | None = None,
        operation_id: str | None = None,
        tags: Iterable[str] = (),
    ) -> Callable[[Handler], Handler]:
        """Register the decorated coroutine as an operation."""

        def register(handler: Handler) -> Handler:
            self.add(
                Operation(
                    method=method,
                    path=path,
                    handler=handler,
                    params=tuple(params),
                    request=request,
                    form=form,
                    response=response,
                    status=status,
                    security=tuple(security),
                    responses=dict(responses or {}),
                    operation_id=operation_id,
                    tags=tuple(tags),
                )
            )
            return handler

        return register

    def add(self, op: Operation) -> None:
        for other in self.operations:
            if other.method == op.method and other.path == op.path:
                raise ValueError(f"{op.method} {op.path} is registered twice")
        # A parameter declared twice (by a group and again by the operation, say) would make
        # the OpenAPI document invalid; header names are case-insensitive.
        declared: set[tuple[Location, str]] = set()
        for p in op.params:
            key = (p.location, p.name.lower() if p.location is Location.HEADER else p.name)
            if key in declared:
                where = f"{op.method} {op.path}: {p.location.value} parameter"
                raise ValueError(f"{where} {p.name} is declared twice")
            declared.add(key)
        self.operations.append(op)

    # -- serving ----------------------------------------------------------------------------

    def app(
        self, *, middlewares: Iterable[Any] = (), client_max_size: int | None = None
    ) -> web.Application:
        """A fresh aiohttp application serving the operations and the built-in endpoints.

        ``middlewares`` run outside the error handling (tracing goes there).
        """
        app = web.Application(
            middlewares=[*middlewares, error_middleware],
            client_max_size=client_max_size or self.max_body_bytes,
        )
        # aiohttp names its own and Python's exact versions in a Server header: a free lookup of
        # known vulnerabilities for whoever scans the service. Every response the application
        # answers (operations, router errors, files, pages added later) goes through this hook.
        app.on_response_prepare.append(_drop_server_header)
        document = self.openapi()

        async def openapi_json(_: web.Request) -> web.StreamResponse:
            return json_response(document)

        app.router.add_get("/openapi.json", openapi_json)
        app.router.add_get("/health/liveness", self.liveness.respond)
        app.router.add_get("/health/readiness", self.readiness.respond)
        # OpenAPI matches a concrete path before a templated one: the URL of a static path
        # (/v1/auth/logout) is that path's resource alone, not a value of a templated sibling
        # (/v1/auth/{provider}); its other methods answer 405 with its own Allow.
        static: dict[str, set[str]] = {}
        for op in self.operations:
            if "{" not in op.path:
                static.setdefault(op.path, set()).add(op.method.upper())
        app[_STATIC_METHODS] = static
        for op in self.operations:
            invoker = Invoker(op, self.converter, self.max_body_bytes)
            # The bound coroutine method, not the object: aiohttp wraps (and warns about) any
            # handler that is not a coroutine function. No route name: a handler may serve
            # several paths (one per version prefix) and aiohttp refuses duplicate names.
            shadowed = {p: m for p, m in static.items() if _template_matches(op.path, p)}
            handler = _off_static(invoker, shadowed) if shadowed else invoker.__call__
            app.router.add_route(op.method, op.path, handler)
        return app

    # -- the OpenAPI document --------------------------------------------------------------

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI 3.0 document of this API (spec 2.9)."""
        builder = SchemaBuilder()
        paths: dict[str, dict[str, Any]] = {}
        schemes: dict[str, Schema] = {}
        error = builder.ref(ErrorBody)
        health = builder.ref(HealthReport)
        paths["/openapi.json"] = {
            "get": {
                "operationId": "openapi",
                "responses": {"200": _json_response("OpenAPI document", {"type": "object"})},
            }
        }
        for probe in ("liveness", "readiness"):
            paths[f"/health/{probe}"] = {
                "get": {
                    "operationId": probe,
                    "responses": {
                        "200": _json_response("Healthy", health),
                        "503": _json_response("Unhealthy", health),
                    },
                }
            }
        used_ids = {"openapi", "liveness", "readiness"}
        for op in self.operations:
            doc = self._operation_doc(op, builder, error)
            # operationId must be unique; a handler registered twice gets a numbered suffix.
            base = candidate = doc["operationId"]
            n = 1
            while candidate in used_ids:
                n += 1
                candidate = f"{base}_{n}"
            used_ids.add(candidate)
            doc["operationId"] = candidate
            paths.setdefault(op.path, {})[op.method.lower()] = doc
            for scheme in op.security:
                schemes[scheme.name] = scheme.openapi()
        components: dict[str, Any] = {"schemas": dict(sorted(builder.components.items()))}
        if schemes:
            components["securitySchemes"] = schemes
        return {
            "openapi": OPENAPI_VERSION,
            "info": {"title": self.title, "version": self.version},
            "paths": paths,
            "components": components,
        }

    def _operation_doc(
        self, op: Operation, builder: SchemaBuilder, error: Schema
    ) -> dict[str, Any]:
        doc: dict[str, Any] = {"operationId": op.name}
        if op.tags:
            doc["tags"] = list(op.tags)
        if op.params:
            doc["parameters"] = [_param_doc(p) for p in op.params]
        if op.request is not None:
            doc["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": builder.schema(op.request)}},
            }
        if op.form is not None:
            form_schema = builder.schema(op.form)
            form_schema.pop("required", None)  # every form field is optional
            doc["requestBody"] = {
                "required": False,
                "content": {
                    "application/x-www-form-urlencoded": {"schema": form_schema},
                    "multipart/form-data": {"schema": form_schema},
                },
            }
        has_body = op.request is not None or op.form is not None
        responses: dict[str, Any] = {}
        status = str(op.success_status)
        if op.response is not None:
            responses[status] = _json_response("Success", builder.schema(op.response))
        else:
            responses[status] = {"description": "Success"}
        if op.params or has_body:
            responses["400"] = _json_response("Invalid request", error)
        if op.security:
            doc["security"] = [{s.name: []} for s in op.security]
            responses["401"] = _json_response("Unauthorized", error)
            if any(getattr(s, "scopes", None) for s in op.security):
                responses["403"] = _json_response("Forbidden", error)
        if has_body:
            responses["413"] = _json_response("Request body too large", error)
            responses["415"] = _json_response("Unsupported media type", error)
        for code, kind in op.responses.items():
            if isinstance(kind, str):
                responses[str(code)] = {"description": kind}
            else:
                responses[str(code)] = _json_response(kind.__name__, builder.schema(kind))
        responses.setdefault("500", _json_response("Internal error", error))
        doc["responses"] = dict(sorted(responses.items()))
        return doc


def _json_response(description: str, schema: Schema) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _param_doc(p: Param) -> dict[str, Any]:
    schema: Schema = {"type": "string"}
    if p.location is not Location.PATH and p.pattern is not None:
        schema["pattern"] = p.pattern
    return {"name": p.name, "in": p.location.value, "required": p.required, "schema": schema}


async def _drop_server_header(_: web.Request, response: web.StreamResponse) -> None:
    # Runs after aiohttp has filled in its default headers, before they are written.
    response.headers.popall("Server", None)


_GENERIC_500 = {"error": "internal_error", "message": "An unexpected error occurred."}
_STATIC_METHODS = web.AppKey("authgate_static_methods", dict[str, set[str]])


def _template_matches(template: str, path: str) -> bool:
    """Whether a concrete path is also a value of a path template (``{x}`` = one segment)."""
    if "{" not in template:
        return False
    pattern = re.sub(r"\\\{[^/]*?\\\}", "[^/]+", re.escape(template))
    return re.fullmatch(pattern, path) is not None


def _off_static(
    invoker: Invoker, static: Mapping[str, set[str]]
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A templated operation's handler that leaves the URLs of static paths alone."""

    async def handle(request: web.Request) -> web.StreamResponse:
        allowed = static.get(request.path)
        if allowed is not None:
            raise web.HTTPMethodNotAllowed(request.method, allowed)
        return await invoker(request)

    return handle


@web.middleware
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Turns router errors and unexpected exceptions into JSON; logs the latter in full."""
    try:
        return await handler(request)
    except HttpError as e:
        return e.response()
    except web.HTTPRequestEntityTooLarge:
        # request.read() past client_max_size (a chunked body): the same answer as a too-large
        # Content-Length gets from the operation.
        limit = request.client_max_size
        return layer_error(413, f"request body larger than {limit} bytes").response()
    except web.HTTPException as e:
        if e.status < 400:
            raise
        if e.status == 405 and request.path in request.app.get(_STATIC_METHODS, {}):
            # aiohttp's Allow joins every matching route's methods, templated siblings too
            allowed = request.app[_STATIC_METHODS][request.path]
            e = web.HTTPMethodNotAllowed(request.method, allowed)
        return _http_exception_json(e)
    except Exception:
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
