"""The parts of a compact JWT, read without verifying it (to look at what a token says)."""

from __future__ import annotations

import base64
import json
from typing import Any


def _part(token: str, index: int) -> dict[str, Any]:
    part = token.split(".")[index]
    decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    assert isinstance(decoded, dict)
    return decoded


def claims_of(token: str) -> dict[str, Any]:
    """The payload of ``token``, unverified."""
    return _part(token, 1)


def header_of(token: str) -> dict[str, Any]:
    """The protected header of ``token``, unverified."""
    return _part(token, 0)
