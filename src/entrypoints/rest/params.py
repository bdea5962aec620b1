"""Declared parameters (path, query, header, cookie) and their validators, run in declaration
order: the first failure answers 400 with the spec's wording (7.3).
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Mapping, Sequence

import attrs
from aiohttp import web

from .errors import HttpError, layer_error


class Location(enum.Enum):
    PATH = "path"
    QUERY = "query"
    HEADER = "header"
    COOKIE = "cookie"


@attrs.frozen
class Required:
    """The parameter must be present (a query parameter at least once); ``enforced=False``
    leaves the check to operations whose contracts fix their own order of checks and errors."""

    enforced: bool = True


@attrs.frozen
class Pattern:
    """Every present value must match the ECMA-262 regular expression (searched, as in JSON
    Schema; anchor it with ``^…$``), published as declared and checked as :func:`ecma_regex`."""

    regex: str
    # What a refused value's answer adds as its ``message``: the values that are accepted, say.
    message: str | None = attrs.field(default=None, eq=False)
    compiled: re.Pattern[str] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "compiled", ecma_regex(self.regex))


# ECMA-262's WhiteSpace and LineTerminator code points: what its \s matches (Python's \s also
# matches U+001C-U+001F and U+0085, and misses U+FEFF).
_ECMA_SPACE = (
    "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
# What ECMA-262's . matches without the s flag: anything but a LineTerminator.
_ECMA_DOT = "[^\\n\\r\\u2028\\u2029]"


def ecma_regex(source: str) -> re.Pattern[str]:
    """Compile an ECMA-262 regular expression (OpenAPI's ``pattern``) to an equivalent Python one:
    a validator must not admit what the published pattern refuses.

    * ``$`` (outside a class) matches only at the very end, not also before a final newline
      (so ``^(a|b)$`` refuses ``"a\\n"``): it becomes ``\\Z``;
    * ``\\d``, ``\\w``, ``\\b`` and their negations are ASCII (``re.ASCII``): ``\\d`` refuses
      non-ASCII digits;
    * ``\\s`` and ``\\S`` are ECMA's whitespace set; ``.`` refuses every line terminator
      (``\\n``, ``\\r``, U+2028, U+2029);
    * ``[]`` matches nothing and ``[^]`` any character.

    A construct without a faithful translation (``\\S`` inside a class) raises ValueError.
    """
    out: list[str] = []
    in_class = False
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        i += 1
        if c == "\\" and i < n:
            out.append(_escape(source, source[i], in_class))
            i += 1
        elif in_class:
            in_class = c != "]"
            # Literal members in ECMA; Python reserves them for nested sets and set operations.
            out.append("\\" + c if c in "[&~|" else c)
        elif c == "[":
            opened, skipped, in_class = _open_class(source, i)
            out.append(opened)
            i += skipped
        else:
            out.append(_OUTSIDE_CLASS.get(c, c))
    return re.compile("".join(out), re.ASCII)


# What ECMA's ``$`` and ``.`` mean outside a class, in Python's syntax.
_OUTSIDE_CLASS = {"$": "\\Z", ".": _ECMA_DOT}


def _escape(source: str, escaped: str, in_class: bool) -> str:
    """The Python for ECMA's ``\\`` + ``escaped``: its own whitespace set for ``\\s``/``\\S``."""
    if escaped == "s":
        return _ECMA_SPACE if in_class else f"[{_ECMA_SPACE}]"
    if escaped == "S":
        if in_class:
            raise ValueError(f"pattern {source!r}: \\S inside a class is not supported")
        return f"[^{_ECMA_SPACE}]"
    return "\\" + escaped


def _open_class(source: str, i: int) -> tuple[str, int, bool]:
    """A class opening at ``source[i - 1]``: its Python text, the characters it consumed, and
    whether it is still open (ECMA's ``[]`` and ``[^]`` are complete classes)."""
    if source.startswith("]", i):
        return "(?!)", 1, False
    if source.startswith("^]", i):
        return "(?s:.)", 2, False
    if source.startswith("^", i):
        return "[^", 1, True
    return "[", 0, True


Validator = Required | Pattern

required = Required()
required_by_operation = Required(enforced=False)


pattern = Pattern


@attrs.frozen
class Param:
    """A declared parameter; see :func:`path`, :func:`query`, :func:`header`, :func:`cookie`."""

    location: Location
    name: str
    validators: tuple[Validator, ...] = ()
    # Documentation only (the OpenAPI document and /docs): what the parameter means, and values
    # to try. Examples are never an enum: they must not change what the operation answers.
    description: str | None = attrs.field(default=None, eq=False, kw_only=True)
    examples: tuple[str, ...] = attrs.field(default=(), eq=False, kw_only=True)

    @property
    def required(self) -> bool:
        return self.location is Location.PATH or any(
            isinstance(v, Required) for v in self.validators
        )

    @property
    def required_enforced(self) -> bool:
        """Whether the layer itself answers 400 when the parameter is missing."""
        return any(isinstance(v, Required) and v.enforced for v in self.validators)

    @property
    def pattern(self) -> str | None:
        return next((v.regex for v in self.validators if isinstance(v, Pattern)), None)

    def missing(self) -> HttpError:
        return layer_error(
            400, f"missing required request parameter in {self.location.value}: {self.name}"
        )

    def invalid(self) -> HttpError:
        message = next(
            (v.message for v in self.validators if isinstance(v, Pattern) and v.message), None
        )
        return layer_error(
            400, f"invalid parameter value in {self.location.value}: {self.name}", message=message
        )


def _param(
    location: Location,
    name: str,
    *validators: Validator,
    description: str | None = None,
    examples: Sequence[str] = (),
) -> Param:
    return Param(location, name, validators, description=description, examples=tuple(examples))


path = functools.partial(_param, Location.PATH)
"""A path parameter (always required); the name must appear as ``{name}`` in the path."""
query = functools.partial(_param, Location.QUERY)
"""A query parameter; it may repeat, and every value is delivered in order."""
header = functools.partial(_param, Location.HEADER)
"""A header parameter, matched case-insensitively by name."""
cookie = functools.partial(_param, Location.COOKIE)
"""A cookie parameter, read from the Cookie header by cookie name."""


# Not frozen, though read-only by intent: made per request, where a frozen __init__ costs an
# object.__setattr__ per field (docs/benchmarks.md).
@attrs.define
class Params:
    """The validated parameter values of one request, by location and name (read-only)."""

    path: Mapping[str, str]
    query: Mapping[str, tuple[str, ...]]
    header: Mapping[str, str]
    cookie: Mapping[str, str]

    def first(self, name: str) -> str | None:
        """The first value of a query parameter, or None."""
        values = self.query.get(name)
        return values[0] if values else None


Check = tuple[Callable[[str], object] | None, Callable[[], HttpError]]
"""One validator, compiled: (regex search, or None for "required"; the error it raises)."""


def extractor(declared: Sequence[Param]) -> Callable[[web.Request], Params]:
    """Read and validate a request's declared parameters (their validators compiled here)."""
    steps = _plan(declared)
    path_loc, query_loc, header_loc = Location.PATH, Location.QUERY, Location.HEADER

    def extract_declared(request: web.Request) -> Params:
        path_values: dict[str, str] = {}
        query_values: dict[str, tuple[str, ...]] = {}
        header_values: dict[str, str] = {}
        cookie_values: dict[str, str] = {}
        for loc, name, checks in steps:
            # Values are kept before they are checked: a failed check discards them all.
            if loc is query_loc:
                values = query_values[name] = tuple(request.query.getall(name, ()))
            else:
                if loc is path_loc:
                    value, kept = request.match_info.get(name), path_values
                elif loc is header_loc:
                    value, kept = request.headers.get(name), header_values
                else:
                    value, kept = request.cookies.get(name), cookie_values
                values = () if value is None else (value,)
                if value is not None:
                    kept[name] = value
            for search, error in checks:
                if search is None:
                    if not values:
                        raise error()
                else:
                    for one in values:
                        if search(one) is None:
                            raise error()
        return Params(path_values, query_values, header_values, cookie_values)

    return extract_declared


def _plan(declared: Sequence[Param]) -> tuple[tuple[Location, str, tuple[Check, ...]], ...]:
    plan: list[tuple[Location, str, tuple[Check, ...]]] = []
    for param in declared:
        checks: list[Check] = []
        for v in param.validators:
            if isinstance(v, Required):
                if v.enforced:
                    checks.append((None, param.missing))
            else:
                checks.append((v.compiled.search, param.invalid))
        plan.append((param.location, param.name, tuple(checks)))
    return tuple(plan)
