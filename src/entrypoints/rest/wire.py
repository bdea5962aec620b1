"""JSON on the wire: strict structuring of request bodies and unstructuring of responses.

Strict means a JSON value is never coerced: ``"1"`` is not an int, ``true`` is not ``1``, and a
key the type does not declare is rejected. A field may carry a different name on the wire
(``providerId`` for ``provider_id``) through :func:`wire_field` or :func:`wire_name`.
"""

from __future__ import annotations

import datetime as dt
import enum
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import cattrs
from cattrs.cols import is_mapping, is_sequence, list_structure_factory, mapping_structure_factory
from cattrs.fns import identity
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

WIRE_NAME = "authgate.wire_name"


def wire_field(name: str, **kwargs: Any) -> Any:
    """An attrs field whose JSON name is ``name`` (other arguments go to ``attrs.field``)."""
    metadata = dict(kwargs.pop("metadata", {}))
    metadata[WIRE_NAME] = name
    return attrs.field(metadata=metadata, **kwargs)


def wire_name(a: attrs.Attribute[Any]) -> str:
    """The JSON name of an attrs field."""
    return str(a.metadata.get(WIRE_NAME, a.name))


def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {_json_kind(value)}")
    return value


def _strict_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {_json_kind(value)}")
    return value


def _strict_float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {_json_kind(value)}")
    return float(value)


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected a boolean, got {_json_kind(value)}")
    return value


def _datetime(value: Any, _: type) -> dt.datetime:
    if not isinstance(value, str):
        raise TypeError(f"expected a date-time string, got {_json_kind(value)}")
    parsed = dt.datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError("expected a date-time with a time zone offset")
    return parsed


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def make_converter() -> cattrs.Converter:
    """The converter used at the HTTP edge."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for kind, hook in _STRICT_SCALARS.items():
        conv.register_structure_hook(kind, hook)
    conv.register_unstructure_hook(dt.datetime, dt.datetime.isoformat)  # no lambda frame
    conv.register_structure_hook_func(_is_enum, _structure_enum)
    conv.register_structure_hook_factory(is_sequence, _sequence_structure)
    conv.register_structure_hook_factory(is_mapping, _mapping_structure)
    conv.register_structure_hook_factory(attrs.has, _attrs_structure)
    conv.register_unstructure_hook_factory(attrs.has, _attrs_unstructure)
    conv.register_unstructure_hook_factory(_is_optional, _optional_unstructure)
    return conv


_STRICT_SCALARS: dict[type, Callable[[Any, type], Any]] = {
    str: _strict_str,
    int: _strict_int,
    float: _strict_float,
    bool: _strict_bool,
    dt.datetime: _datetime,
}


def _is_enum(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, enum.Enum)


def _structure_enum(value: Any, cls: type[enum.Enum]) -> enum.Enum:
    return cls(value)


def _checked(base: Callable[[Any, Any], Any], t: Any, kind: type, expected: str) -> Any:
    """``base`` (a hook cattrs made for ``t``), refusing a JSON value that is not ``kind``."""

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, kind):
            raise TypeError(f"expected {expected}, got {_json_kind(value)}")
        return base(value, t)

    return structure


def _sequence_structure(t: Any, conv: cattrs.Converter) -> Any:
    return _checked(list_structure_factory(t, conv), t, list, "an array")


def _mapping_structure(t: Any, conv: cattrs.Converter) -> Any:
    return _checked(mapping_structure_factory(t, conv), t, dict, "an object")


# The hooks cattrs generates keep no copy of their source in ``linecache`` (its default, for
# debuggers): that text would stay resident as long as the service runs (docs/benchmarks.md).
def _attrs_structure(cls: type[Any], conv: cattrs.Converter) -> Any:
    overrides = {a.name: override(rename=wire_name(a)) for a in attrs.fields(cls)}
    base = make_dict_structure_fn(
        cls,
        conv,
        _cattrs_forbid_extra_keys=True,
        _cattrs_use_linecache=False,
        **overrides,  # type: ignore[arg-type]
    )
    return _checked(base, cls, dict, "an object")


def _attrs_unstructure(cls: type[Any], conv: cattrs.Converter) -> Any:
    overrides = {
        a.name: override(rename=wire_name(a), omit_if_default=a.default is None)
        for a in attrs.fields(cls)
    }
    return make_dict_unstructure_fn(
        cls,
        conv,
        _cattrs_use_linecache=False,
        **overrides,  # type: ignore[arg-type]
    )


def _optional_unstructure(t: Any, conv: cattrs.Converter) -> Any:
    # ``X | None`` where X passes through as it is (str, int, bool...) passes through too:
    # cattrs' own hook would call two functions per such field of every answer, where the
    # generated code reads the attribute when a field's hook is ``identity``.
    [inner] = [a for a in typing.get_args(t) if a is not type(None)]
    if conv.get_unstructure_hook(inner) is identity:
        return identity
    return conv.gen_unstructure_optional(t)


def is_union(t: Any) -> bool:
    """Whether ``t`` is ``X | Y`` (``Union[X, Y]``, ``Optional[X]``)."""
    return typing.get_origin(t) in (typing.Union, types.UnionType)


def _is_optional(t: Any) -> bool:
    """Whether ``t`` is ``X | None`` (``Optional[X]``) of one type ``X``."""
    args = typing.get_args(t)
    return is_union(t) and len(args) == 2 and type(None) in args


def describe_error(exc: BaseException) -> str:
    """One line naming the field path(s) of a structuring failure, e.g. ``$.user.age: …``."""
    return "; ".join(_error_lines(exc, "$"))


def _error_lines(exc: BaseException, path: str) -> list[str]:
    """Walk cattrs' exception groups, naming fields by their wire names."""
    located: list[tuple[BaseException, str]] = []
    other: Sequence[BaseException]
    if isinstance(exc, cattrs.ClassValidationError):
        names = {a.name: wire_name(a) for a in attrs.fields(exc.cl)} if attrs.has(exc.cl) else {}
        noted, other = exc.group_exceptions()
        located = [(inner, f"{path}.{names.get(n.name, n.name)}") for inner, n in noted]
    elif isinstance(exc, cattrs.IterableValidationError):
        indexed, other = exc.group_exceptions()
        located = [(inner, f"{path}[{n.index!r}]") for inner, n in indexed]
    elif isinstance(exc, cattrs.BaseValidationError):
        other = exc.exceptions
    else:
        return [f"{path}: {_describe_leaf(exc)}"]
    lines = [line for inner, where in located for line in _error_lines(inner, where)]
    return lines + [line for inner in other for line in _error_lines(inner, path)]


def _describe_leaf(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return "unknown field(s): " + ", ".join(sorted(exc.extra_fields))
    if isinstance(exc, TypeError | ValueError) and str(exc):
        return str(exc)
    return "invalid value"
