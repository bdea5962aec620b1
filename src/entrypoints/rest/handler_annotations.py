"""Register-time agreement between an operation's declared types and its handler's annotations:
where they disagree, the first request would fail inside the layer (a 500), so
:func:`check_handler` raises :class:`TypeError` at registration instead.

Only what can be known is checked: an annotation that is missing, ``Any``, a type variable or
cannot be resolved (a class local to a function) is accepted. A handler may return a raw
``web.StreamResponse`` and ``None`` (an empty success) whatever its declared response.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .call import Call, Reply

_NONE = type(None)
_LOOSE: tuple[Any, ...] = (Any, object)


def check_handler(
    handler: Callable[..., Any], body: type | None, response: type | None, where: str
) -> None:
    """Raise TypeError (naming ``where``) if ``handler``'s annotations contradict the
    declared request ``body`` type or ``response`` type (None: no body, no response body)."""
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
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
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
