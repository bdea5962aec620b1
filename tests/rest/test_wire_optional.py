"""Optional fields of an answer: a value that passes through as it is (a string, a number, a
boolean) is read as it is, and every optional field unstructures as before: its value, or
nothing when it is None and defaults to None."""

from __future__ import annotations

import datetime as dt
import typing

import attrs
import cattrs
from cattrs.fns import identity

from authgate.entrypoints.rest import wire_field
from authgate.entrypoints.rest.wire import make_converter


@attrs.frozen
class Inner:
    city: str


@attrs.frozen
class Answer:
    name: str | None = None
    count: typing.Optional[int] = None  # noqa: UP045 - the other spelling of an optional
    ratio: float | None = None
    active: bool | None = None
    when: dt.datetime | None = wire_field("when", default=None)
    tags: list[str] | None = None
    inner: Inner | None = None
    required: str | None = wire_field("requiredValue", default="x")


def test_an_optional_that_passes_through_has_the_identity_hook() -> None:
    converter = make_converter()
    for t in (str | None, typing.Optional[int], float | None, bool | None):  # noqa: UP045
        assert converter.get_unstructure_hook(t) is identity, t
    for t in (dt.datetime | None, list[str] | None, Inner | None):
        assert converter.get_unstructure_hook(t) is not identity, t


def test_answers_unstructure_as_cattrs_own_hooks_would() -> None:
    full = Answer(
        name="Ada",
        count=3,
        ratio=0.5,
        active=False,
        when=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        tags=["a"],
        inner=Inner("Paris"),
        required=None,
    )
    converter = make_converter()
    assert converter.unstructure(full) == {
        "name": "Ada",
        "count": 3,
        "ratio": 0.5,
        "active": False,
        "when": "2026-01-02T03:04:05+00:00",
        "tags": ["a"],
        "inner": {"city": "Paris"},
        "requiredValue": None,
    }
    assert converter.unstructure(Answer()) == {"requiredValue": "x"}
    # the library's own optional hook gives the same values
    library = cattrs.Converter()
    for t, value in (
        (str | None, "Ada"),
        (str | None, None),
        (int | None, 3),
        (bool | None, False),
        (list[str] | None, ["a"]),
    ):
        assert converter.unstructure(value, t) == library.unstructure(value, t)
