"""A registered operation and the per-request path through it: security → declared
parameters → request body → the operation → its response (an :class:`~.errors.HttpError` raised
anywhere on it is exactly that response).
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypedDict

import attrs
import cattrs
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from .call import Call, Handler, Reply
from .cors import Cors
from .errors import JSON_CONTENT_TYPE, HttpError, json_response, json_text, layer_error, too_large
from .params import Location, Param, extractor
from .security import SecurityScheme, authenticate
from .wire import describe_error, is_union, wire_name

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
        self._cors = op.cors

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        if self._cors is not None:
            self._cors.admit(request)  # its refusal answered by the error handling, as before
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
    return layer_error(400, "invalid_body", message)


def _unsupported(message: str) -> HttpError:
    return layer_error(415, "unsupported_media_type", message)


def _not_json(constant: str) -> Any:
    # Python's json accepts NaN and ±Infinity; JSON (RFC 8259) does not.
    raise ValueError(f"{constant} is not a JSON value")


def _is_json(content_type: str) -> bool:
    return content_type == JSON_CONTENT_TYPE or (
        content_type.startswith("application/") and content_type.endswith("+json")
    )


_NONE = type(None)
_LOOSE: tuple[Any, ...] = (Any, object)


def check_handler(
    handler: Callable[..., Any], body: type | None, response: type | None, where: str
) -> None:
    """Raise TypeError (naming ``where``) at registration if ``handler``'s annotations
    contradict the declared request ``body`` type or ``response`` type (None: no body, no
    response body), where the first request would fail inside the layer (a 500). Only what can
    be known is checked: an annotation that is missing, ``Any``, a type variable or unresolvable
    (a class local to a function) is accepted; a raw ``web.StreamResponse`` and ``None`` (an
    empty success) may be returned whatever the declared response."""
    # A callable object is checked by its __call__ (a bound method: no self to skip).
    target: Any = handler
    if not inspect.isroutine(target):
        target = target.__call__
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):  # a builtin or an object without a signature
        return
    hints = _hints(target)
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if positional and positional[0].name in hints:
        taken = hints[positional[0].name]
        if typing.get_origin(taken) is Call:
            (arg,) = typing.get_args(taken)
            if not _accepts(arg, body):
                wanted = "no request body" if body is None else f"a body of type {_name(body)}"
                raise TypeError(
                    f"{where}: the handler takes {_name(taken)} but {wanted} is declared"
                )
    if "return" in hints:
        returned = hints["return"]
        for member in _members(returned):
            if not _returnable(member, response):
                declared = "no response body" if response is None else _name(response)
                raise TypeError(
                    f"{where}: the handler returns {_name(returned)} but the declared response "
                    f"is {declared}"
                )


def _hints(function: Any) -> dict[str, Any]:
    """The function's annotations, each resolved on its own; the unresolvable ones left out."""
    try:
        raw = inspect.get_annotations(function)
    except TypeError:
        return {}
    namespace = getattr(function, "__globals__", {})
    hints: dict[str, Any] = {}
    for name, annotation in raw.items():
        resolved = annotation
        if isinstance(annotation, str):  # evaluated in its module, as get_type_hints does
            try:
                resolved = eval(annotation, namespace)  # noqa: S307 - the module's own text
            except Exception:  # noqa: S112 - a name local to a function, a typo: unchecked
                continue
        hints[name] = _NONE if resolved is None else resolved
    return hints


def _members(annotation: Any) -> tuple[Any, ...]:
    if is_union(annotation):
        return typing.get_args(annotation)
    return (annotation,)


def _loose(annotation: Any) -> bool:
    return annotation in _LOOSE or isinstance(annotation, typing.TypeVar)


def _accepts(annotation: Any, value_type: type | None) -> bool:
    """Whether a value of ``value_type`` (None: the value None) fits ``annotation``."""
    if _loose(annotation):
        return True
    members = _members(annotation)
    if len(members) > 1:
        return any(_accepts(m, value_type) for m in members)
    if value_type is None or value_type is _NONE:
        return annotation is _NONE
    if annotation is _NONE:
        return False
    if annotation == value_type:
        return True
    a_origin, v_origin = typing.get_origin(annotation), typing.get_origin(value_type)
    if a_origin is None and v_origin is None:
        return (
            isinstance(annotation, type)
            and isinstance(value_type, type)
            and issubclass(value_type, annotation)
        )
    # Generic aliases (list[Item], say): compatible containers with compatible arguments.
    a_args, v_args = typing.get_args(annotation), typing.get_args(value_type)
    return (
        isinstance(a_origin or annotation, type)
        and isinstance(v_origin or value_type, type)
        and issubclass(v_origin or value_type, a_origin or annotation)
        and (not a_args or len(a_args) == len(v_args))
        and all(_accepts(a, v) for a, v in zip(a_args, v_args, strict=False))
    )


def _returnable(member: Any, response: type | None, in_reply: bool = False) -> bool:
    """Whether a handler may return ``member`` (one alternative of its return or Reply body)."""
    if _loose(member) or member is _NONE:
        return True
    if not in_reply:
        if isinstance(member, type) and issubclass(member, web.StreamResponse):
            return True  # a raw response is sent as is
        if member is Reply or typing.get_origin(member) is Reply:
            args = typing.get_args(member)
            return not args or all(_returnable(m, response, True) for m in _members(args[0]))
    if response is None:
        return False  # a value with no declared response would be dropped silently
    return _accepts(response, member)


def _name(annotation: Any) -> str:
    if annotation is _NONE:
        return "None"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__qualname__
    text = repr(annotation)
    for module in ("typing.", "authgate.entrypoints.rest.call.", "aiohttp.web_response."):
        text = text.replace(module, "")
    return text.replace("NoneType", "None")
