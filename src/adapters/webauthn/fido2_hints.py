"""A fast path beside fido2: its data classes' type hints, read once per class.

Every fido2 WebAuthn data class calls ``typing.get_type_hints`` on itself each time one is made
or parsed (``fido2.utils._DataClassMapping``), evaluating its string annotations again: over
half of a passkey sign-in's server CPU (docs/benchmarks.md). A class's hints never change, so
they are kept per fido2 class (a bounded set) and handed out as copies.

It replaces ``fido2.utils.get_type_hints``: pyproject.toml pins fido2 to 2.2, and
:func:`memoize_type_hints` checks at start-up that the name is still ``typing.get_type_hints``;
if not (another fido2), the library's own path stays, with one warning.
"""

from __future__ import annotations

import contextlib
import logging
import typing
from collections.abc import Iterator
from typing import Any

import fido2.utils

log = logging.getLogger("authgate.passkeys")

_HINTS: dict[type, dict[str, Any]] = {}


def _memoized(
    obj: Any,
    globalns: dict[str, Any] | None = None,
    localns: typing.Mapping[str, Any] | None = None,
    include_extras: bool = False,
) -> dict[str, Any]:
    """``typing.get_type_hints``, kept per fido2 class (any other call goes through)."""
    if (
        globalns is not None
        or localns is not None
        or include_extras
        or not isinstance(obj, type)
        or not obj.__module__.startswith("fido2.")
    ):
        return typing.get_type_hints(obj, globalns, localns, include_extras)
    hints = _HINTS.get(obj)
    if hints is None:
        hints = _HINTS[obj] = typing.get_type_hints(obj)
    return dict(hints)


def memoize_type_hints() -> bool:
    """Install the fast path (idempotent); whether it is on."""
    current = getattr(fido2.utils, "get_type_hints", None)
    if current is _memoized:
        return True
    if current is not typing.get_type_hints:
        log.warning(
            "fido2.utils no longer reads its type hints through typing.get_type_hints: "
            "passkey sign-ins run on the library's own (slower) path"
        )
        return False
    setattr(fido2.utils, "get_type_hints", _memoized)  # noqa: B010
    return True


@contextlib.contextmanager
def library_path() -> Iterator[None]:
    """The library's own path for the block (tests compare the two)."""
    current = getattr(fido2.utils, "get_type_hints", None)
    setattr(fido2.utils, "get_type_hints", typing.get_type_hints)  # noqa: B010
    try:
        yield
    finally:
        setattr(fido2.utils, "get_type_hints", current)  # noqa: B010
