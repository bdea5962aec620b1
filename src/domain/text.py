"""Text that a client or a provider chose, made safe to store and to show: cleaned once,
before any port sees it, so that every adapter stores the same thing (PostgreSQL refuses NUL,
and no encoder accepts the lone surrogates that stand for a header's undecodable bytes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# C0 controls, DEL, C1 controls, lone surrogates; U+2028/U+2029 break lines in many viewers.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def has_control_characters(value: str) -> bool:
    """Whether ``value`` holds a character that :func:`printable` would replace."""
    return _UNSAFE.search(value) is not None


def printable(value: str | None, limit: int) -> str | None:
    """``value`` with control characters and lone surrogates replaced by U+FFFD, cut to
    ``limit`` characters; None for None or an empty string."""
    if not value:
        return None
    return _UNSAFE.sub(REPLACEMENT, value[:limit])


def storable(value: Any) -> Any:
    """A JSON-like value (provider profile data) with NUL and lone surrogates replaced in every
    string, keys included; other values as they are."""
    if isinstance(value, str):
        return _UNSTORABLE.sub(REPLACEMENT, value)
    if isinstance(value, Mapping):
        return {storable(str(k)): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(v) for v in value]
    return value
