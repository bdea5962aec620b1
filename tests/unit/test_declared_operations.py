"""Operations declared on their handlers: registered in the order written, under the face's
tag and CORS policy, with what only the face's instance knows resolved at registration."""

from __future__ import annotations

from typing import Any

from authgate.domain import errors
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.operations import Late, Operations, flag, operation
from authgate.entrypoints.rest import Api, Call, Cors


class Face(Operations):
    tag = docs.SIGN_IN

    def __init__(self, name: str, cors: Cors | None) -> None:
        self.name = name
        self.cors = cors

    @operation(
        "GET",
        "/second",
        operation_id="second",
        summary=Late(lambda face: f"for {face.name}"),
        refusals=Late(lambda face: (errors.InvalidProvider(face.name, [face.name]),)),
    )
    @operation("POST", "/second", operation_id="second_form", params=[flag("all", "All.")])
    async def second(self, call: Call[None]) -> None: ...

    @operation("GET", "/third", operation_id="third", cors=None)
    async def third(self, call: Call[None]) -> None: ...


class Sub(Face):
    @operation("GET", "/first", operation_id="first")
    async def first(self, call: Call[None]) -> None: ...


def test_operations_register_in_declaration_order_bases_first() -> None:
    api = Api("t", "1")
    Sub("google", Cors(["https://app.example"])).register(api)
    ops = [(op.method, op.path, op.operation_id) for op in api.operations]
    assert ops == [
        ("GET", "/second", "second"),
        ("POST", "/second", "second_form"),
        ("GET", "/third", "third"),
        ("GET", "/first", "first"),
    ]
    assert api.tags == {docs.SIGN_IN: docs.TAGS[docs.SIGN_IN]}


def test_late_values_and_defaults_are_the_instance_s() -> None:
    api = Api("t", "1")
    cors = Cors(["https://app.example"])
    Face("google", cors).register(api)
    second, form, third = api.operations
    assert second.summary == "for google"
    assert second.tags == (docs.SIGN_IN,)
    assert second.cors is cors and form.cors is cors and third.cors is None
    assert list(second.examples[400]) == ["invalid_provider"]
    assert form.examples == {}
    document: dict[str, Any] = api.openapi()
    (param,) = document["paths"]["/second"]["post"]["parameters"]
    assert param["schema"]["pattern"] == "^(true|false)$"
