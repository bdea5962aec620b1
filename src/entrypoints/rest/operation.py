"""A registered operation and the per-request path through it: security → declared
parameters → request body → the operation → its response (an :class:`~.errors.HttpError` raised
anywhere on it is exactly that response).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypedDict

import attrs
import cattrs
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from .call import Call, Handler, Reply
from .cors import Cors
from .errors import JSON_CONTENT_TYPE, HttpError, json_response, json_text, service_error, too_large
from .handler_annotations import check_handler
from .params import Location, Param, extractor
from .security import SecurityScheme, authenticate
from .wire import describe_error, wire_name

_PATH_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@attrs.frozen
class RawResponse:
    """A documented answer that is not JSON (an HTML page the handler makes), its media type."""

    description: str
    media_type: str = "text/html"


# Copies of the declaration's collections (their element types checked by OperationOptions).
def _tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(items)


def _responses(
    responses: Mapping[int, type | str | RawResponse] | None,
) -> dict[int, type | str | RawResponse]:
    return dict(responses or {})


def _examples(
    examples: Mapping[int, Mapping[str, Mapping[str, Any]]] | None,
) -> dict[int, dict[str, Mapping[str, Any]]]:
    return {status: dict(named) for status, named in (examples or {}).items()}


class OperationOptions(TypedDict, total=False):
    """The keywords of :meth:`~.api.Api.operation`: :class:`Operation`'s other fields."""

    params: Iterable[Param]
    request: type | None
    form: type | None
    response: type | None
    status: int | None
    security: Iterable[SecurityScheme]
    security_optional: bool
    responses: Mapping[int, type | str | RawResponse] | None
    operation_id: str | None
    tags: Iterable[str]
    cors: Cors | None
    raw_body: Mapping[str, type | None] | None
    summary: str | None
    description: str | None
    examples: Mapping[int, Mapping[str, Mapping[str, Any]]] | None


@attrs.frozen
class Operation:
    """(method, path shape, parameter declarations) plus the typed request/response."""

    method: str
    path: str
    handler: Handler = attrs.field(eq=False)
    params: tuple[Param, ...] = attrs.field(default=(), converter=_tuple)
    request: type | None = None
    form: type | None = None
    response: type | None = None
    status: int | None = None
    security: tuple[SecurityScheme, ...] = attrs.field(default=(), converter=_tuple)
    security_optional: bool = False
    responses: Mapping[int, type | str | RawResponse] = attrs.field(
        factory=dict, converter=_responses
    )
    operation_id: str | None = None
    tags: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    # Documentation only (the OpenAPI document and /docs): a one-line summary, a longer
    # description, and example error bodies by status and name (the codes it can answer).
    summary: str | None = None
    description: str | None = None
    examples: Mapping[int, Mapping[str, Mapping[str, Any]]] = attrs.field(
        factory=dict, converter=_examples
    )
    # Pages of other origins may call it from a browser (not part of the OpenAPI document).
    cors: Cors | None = None
    # A body the operation reads itself (``call.body`` is its bytes, at most the API's body
    # limit; no content type is enforced): the media types documented, each with the attrs
    # type of its schema or None for a plain string (a JWT, say).
    raw_body: Mapping[str, type | None] | None = None

    def __attrs_post_init__(self) -> None:
        if self.security_optional and not self.security:
            raise ValueError(f"{self.path}: optional security needs at least one scheme")
        if sum(x is not None for x in (self.request, self.form, self.raw_body)) > 1:
            raise ValueError(f"{self.path}: a JSON, a form and a raw body are exclusive")
        if self.form is not None and not attrs.has(self.form):
            raise TypeError(f"{self.path}: the form type must be an attrs class")
        in_path = _PATH_PARAM.findall(self.path)
        declared = {p.name for p in self.params if p.location is Location.PATH}
        if len(set(in_path)) != len(in_path):
            raise ValueError(f"{self.path}: a path parameter appears twice")
        # Path segments that are not declared get a plain (unvalidated) declaration.
        extra = tuple(Param(Location.PATH, n) for n in in_path if n not in declared)
        object.__setattr__(self, "params", extra + self.params)
        stray = declared - set(in_path)
        if stray:
            raise ValueError(f"{self.path}: declared path parameter(s) not in the path: {stray}")
        object.__setattr__(self, "method", self.method.upper())

    def check_handler(self) -> None:
        """TypeError if the handler's annotations contradict the declared body or response."""
        body = bytes if self.raw_body is not None else self.request or self.form
        where = f"operation {self.name} ({self.method} {self.path})"
        check_handler(self.handler, body, self.response, where)

    @property
    def success_status(self) -> int:
        if self.status is not None:
            return self.status
        return 200 if self.response is not None else 204

    @property
    def name(self) -> str:
        return self.operation_id or str(getattr(self.handler, "__name__", "operation"))


class Invoker:
    """The compiled request path of one operation (hooks looked up once, not per request)."""

    def __init__(self, op: Operation, converter: cattrs.Converter, max_body: int) -> None:
        self.op = op
        self.max_body = max_body
        self._structure: Callable[[Any, Any], Any] | None = (
            converter.get_structure_hook(op.request) if op.request is not None else None
        )
        self._unstructure: Callable[[Any], Any] | None = (
            converter.get_unstructure_hook(op.response) if op.response is not None else None
        )
        self._status = op.success_status
        self._form_fields = (
            tuple((a.name, wire_name(a)) for a in attrs.fields(op.form)) if op.form else ()
        )
        self._reader: Callable[[web.Request], Awaitable[Any]] | None = (
            self._read_body
            if op.request is not None
            else self._read_form
            if op.form
            else web.BaseRequest.read  # a raw body: its bytes
            if op.raw_body is not None
            else None
        )
        # Looked up once: __call__ runs on every request.
        self._handler = op.handler
        self._security = op.security
        self._optional = op.security_optional
        self._extract = extractor(op.params)
        self._response_type = op.response

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        try:
            principal = (
                await authenticate(request, self._security, self._optional)
                if self._security
                else None
            )
            params = self._extract(request)
            body = None
            if self._reader is not None:
                if request.content_length is not None and request.content_length > self.max_body:
                    raise too_large(self.max_body)
                body = await self._reader(request)
            result = await self._handler(Call(request, params, body, principal))
        except HttpError as e:
            return e.response()
        unstructure = self._unstructure
        if result.__class__ is self._response_type and unstructure is not None:
            # The common case inline: a value of the declared type (no Reply, no StreamResponse).
            return web.Response(
                body=json_text(unstructure(result)).encode(),
                status=self._status,
                content_type=JSON_CONTENT_TYPE,
            )
        return self._render(result)

    async def _read_body(self, request: web.Request) -> Any:
        assert self._structure is not None
        raw = await request.read()
        if not raw:
            raise _invalid_body("missing request body")
        if not _is_json(request.content_type):
            raise _unsupported("request body must be application/json")
        try:
            data = json.loads(raw, parse_constant=_not_json)
        except (ValueError, UnicodeDecodeError) as e:
            raise _invalid_body(f"invalid JSON in request body: {e}") from None
        try:
            return self._structure(data, self.op.request)
        except (cattrs.BaseValidationError, TypeError, ValueError) as e:
            raise _invalid_body(f"invalid request body: {describe_error(e)}") from None

    async def _read_form(self, request: web.Request) -> Any:
        """A form body (``application/x-www-form-urlencoded`` or multipart) into the form
        type: every field optional, text values only, fields it does not declare ignored
        (providers post more than a client needs, such as Apple's ``id_token``)."""
        assert self.op.form is not None
        values: dict[str, str] = {}
        if request.body_exists:
            if request.content_type not in _FORM_TYPES:
                raise _unsupported("request body must be a form (" + ", ".join(_FORM_TYPES) + ")")
            try:
                form = await request.post()
            except (ValueError, HttpProcessingError):
                # multipart without a boundary, a part with invalid headers, bad encoding:
                # the client's error, not the server's
                raise _invalid_body("malformed form body") from None
            for name, wire in self._form_fields:
                value = form.get(wire)
                if isinstance(value, str):
                    values[name] = value
        return self.op.form(**values)

    def _render(self, result: Any) -> web.StreamResponse:
        if isinstance(result, web.StreamResponse):
            return result
        if isinstance(result, Reply):
            status = self._status if result.status is None else result.status
            response = self._respond(result.body, status, result.headers)
            for cookie in result.cookies:
                cookie.set_on(response)
            return response
        return self._respond(result, self._status, None)

    def _respond(self, result: Any, status: int, headers: Mapping[str, str] | None) -> web.Response:
        if result is None or self._unstructure is None:
            return web.Response(status=status, headers=headers)
        return json_response(self._unstructure(result), status, headers)


_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _invalid_body(message: str) -> HttpError:
    return service_error(400, "invalid_body", message)


def _unsupported(message: str) -> HttpError:
    return service_error(415, "unsupported_media_type", message)


def _not_json(constant: str) -> Any:
    # Python's json accepts NaN and ±Infinity; JSON (RFC 8259) does not.
    raise ValueError(f"{constant} is not a JSON value")


def _is_json(content_type: str) -> bool:
    return content_type == JSON_CONTENT_TYPE or (
        content_type.startswith("application/") and content_type.endswith("+json")
    )
