"""JSON Schema (OpenAPI 3.0 dialect) for attrs classes, following the spec's rules (2.9): a
nested attrs class is expanded inline, except inside a list, where the items refer to
``#/components/schemas/<TypeName>``; a field is required unless it has a default or admits None;
no enum, description, length or range constraints are generated.
"""

from __future__ import annotations

import collections.abc as cabc
import datetime as dt
import enum
import typing
from typing import Any

import attrs

from .wire import is_union, wire_name

Schema = dict[str, Any]

_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}
_FORMATS = {dt.datetime: "date-time", dt.date: "date"}


class SchemaBuilder:
    """Builds schemas and collects the named component schemas they refer to."""

    def __init__(self) -> None:
        self.components: dict[str, Schema] = {}
        self._building: set[type] = set()
        self._named: dict[str, type] = {}

    def object_schema(self, cls: type) -> Schema:
        """The inline object schema of an attrs class."""
        hints = typing.get_type_hints(cls)
        properties: dict[str, Schema] = {}
        required: list[str] = []
        for a in attrs.fields(cls):
            name = wire_name(a)
            tp = hints.get(a.name, a.type)
            optional = _admits_none(tp)
            properties[name] = self.schema(_strip_none(tp))
            if a.default is attrs.NOTHING and not optional:
                required.append(name)
        schema: Schema = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        return schema

    def ref(self, cls: type) -> Schema:
        """A reference to the named component schema of an attrs class, registering it."""
        name = cls.__name__
        owner = self._named.setdefault(name, cls)
        if owner is not cls:
            # Two classes, one component name: a silent $ref to the wrong schema otherwise.
            raise TypeError(
                f"two schemas named {name}: {owner.__module__}.{owner.__qualname__} and "
                f"{cls.__module__}.{cls.__qualname__}"
            )
        if name not in self.components and cls not in self._building:
            self._building.add(cls)
            try:
                self.components[name] = self.object_schema(cls)
            finally:
                self._building.discard(cls)
        return {"$ref": f"#/components/schemas/{name}"}

    def schema(self, tp: Any) -> Schema:
        """The schema of a field or body type."""
        tp = _strip_none(tp)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if tp is Any:
            return {}
        if tp in _TYPES:
            return {"type": _TYPES[tp]}
        if tp in _FORMATS:
            return {"type": "string", "format": _FORMATS[tp]}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _values_schema((m.value for m in tp), f"enumeration {tp.__name__}")
        if origin is typing.Literal:
            return _values_schema(args, "a literal")
        if isinstance(tp, type) and attrs.has(tp):
            return self.object_schema(tp)
        if origin in (dict, cabc.Mapping, cabc.MutableMapping):
            key, value = args or (str, Any)
            if key is not str:
                raise TypeError(f"only string-keyed maps can be described, not {tp!r}")
            return {"type": "object", "additionalProperties": self.schema(value)}
        if origin in (list, tuple, set, frozenset, cabc.Sequence, cabc.MutableSequence, cabc.Set):
            item = args[0] if args else Any
            if isinstance(item, type) and attrs.has(item):
                return {"type": "array", "items": self.ref(item)}
            return {"type": "array", "items": self.schema(item)}
        raise TypeError(f"no OpenAPI schema rule for type {tp!r}")


def _admits_none(tp: Any) -> bool:
    return tp is None or (is_union(tp) and type(None) in typing.get_args(tp))


def _strip_none(tp: Any) -> Any:
    if is_union(tp):
        rest = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
        raise TypeError(f"unions other than X | None cannot be described: {tp!r}")
    return tp


def _values_schema(values: cabc.Iterable[Any], what: str) -> Schema:
    """An enumeration's or a literal's values' type (the spec: no enum constraint)."""
    values = list(values)
    for kind, name in ((str, "string"), (bool, "boolean"), (int, "integer")):
        if all(isinstance(v, kind) for v in values):
            return {"type": name}
    raise TypeError(f"{what} mixes value types: {values!r}")
