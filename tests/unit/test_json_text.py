"""The REST layer's JSON writer (entrypoints/rest/errors.py ``json_text``) writes exactly what
``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` writes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from authgate.entrypoints.rest.errors import json_text

VALUES: list[Any] = [
    {"error": "invalid_request", "message": 'quote " backslash \\ newline \n tab \t'},
    {"providers": [{"provider": "google", "isPrimary": True, "linkedAt": "2026-01-01"}]},
    {"nested": {"list": [1, -2, 3.25, 1e300, None, False, "é ü 中 \u2028 \x00"]}},
    {"nan": float("nan"), "inf": float("inf"), "ninf": float("-inf")},
    {1: "int key", False: "bool key", None: "null key", 2.5: "float key"},
    "a top-level string with \u2028 and é",
    12345678901234567890,
    0.1,
    None,
    [],
    {},
    [[[]], {}],
]


@pytest.mark.parametrize("value", VALUES)
def test_same_text_as_json_dumps(value: Any) -> None:
    assert json_text(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_a_value_json_cannot_write_is_a_type_error_as_with_json_dumps() -> None:
    with pytest.raises(TypeError):
        json_text({"x": object()})
