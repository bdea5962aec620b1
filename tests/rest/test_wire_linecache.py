"""The converter's generated hooks keep no source text in ``linecache``: one hook is made per
wire class for as long as the service runs, and cattrs would keep each one's text resident.
The hooks still work, and an error inside one still names the hook's file and the field."""

from __future__ import annotations

import linecache
import traceback

import attrs
import cattrs
import pytest

from authgate.entrypoints.rest import wire_field
from authgate.entrypoints.rest.wire import make_converter


@attrs.frozen
class Body:
    display_name: str = wire_field("displayName")
    count: int = 0


def _generated_entries() -> set[str]:
    return {name for name in linecache.cache if name.startswith("<cattrs generated")}


def test_hooks_keep_no_source_in_linecache() -> None:
    before = _generated_entries()
    converter = make_converter()
    value = converter.structure({"displayName": "Ada", "count": 2}, Body)
    assert value == Body("Ada", 2)
    assert converter.unstructure(value) == {"displayName": "Ada", "count": 2}
    assert _generated_entries() == before
    # cattrs' own default keeps it: what the converter's setting changes
    library = cattrs.Converter()
    library.structure({"display_name": "Ada", "count": 2}, Body)
    assert _generated_entries() - before


def test_a_refusal_inside_a_hook_still_names_the_field() -> None:
    converter = make_converter()
    with pytest.raises(cattrs.ClassValidationError) as raised:
        converter.structure({"displayName": 1}, Body)
    [error] = raised.value.exceptions
    assert isinstance(error, TypeError)
    assert error.__notes__ == ["Structuring class Body @ attribute display_name"]
    files = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    assert any(f.startswith("<cattrs generated structure") for f in files), files
