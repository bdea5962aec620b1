"""Register-time agreement of an operation's declared types and its handler's annotations:
a disagreement is a TypeError naming the operation when it is registered, not a 500 on its
first request; loosely annotated handlers still register."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from aiohttp import web

from authgate.entrypoints.rest import Api, Call, Reply

from .conftest import Serve


@attrs.frozen
class Item:
    name: str


@attrs.frozen
class SpecialItem(Item):
    pass


@attrs.frozen
class Other:
    size: int


@attrs.frozen
class Form:
    code: str | None = None


class Ops:
    """Bound methods, as the application registers its handlers."""

    async def item(self, call: Call[None]) -> Reply[Item]:
        return Reply(Item("x"))


async def takes_item(call: Call[Item]) -> None:
    return None


async def takes_nothing(call: Call[None]) -> None:
    return None


async def takes_form_or_nothing(call: Call[Form | None]) -> web.StreamResponse:
    return web.Response()


async def returns_item(call: Call[None]) -> Item:
    return Item("x")


async def returns_special(call: Call[None]) -> SpecialItem:
    return SpecialItem("x")


async def returns_other(call: Call[None]) -> Other:
    return Other(1)


async def returns_reply_other(call: Call[None]) -> Reply[Other]:
    return Reply(Other(1))


async def returns_stream_or_reply(call: Call[None]) -> web.StreamResponse | Reply[Item]:
    return Reply(Item("x"))


async def returns_item_or_other(call: Call[None]) -> Item | Other:
    return Item("x")


async def returns_any(call: Call[Any]) -> Any:
    return Item("x")


async def unannotated(call, *rest):  # type: ignore[no-untyped-def]
    return Item("x")


@pytest.mark.parametrize(
    ("options", "handler", "message"),
    [
        (
            {"method": "POST", "request": Item},
            takes_nothing,
            r"operation takes_nothing \(POST /things\): the handler takes Call\[None\] but a "
            r"body of type Item is declared",
        ),
        (
            {"method": "POST", "request": Other},
            takes_item,
            r"operation takes_item \(POST /things\): the handler takes .*Item\] but a body "
            r"of type Other is declared",
        ),
        (
            {"method": "POST"},
            takes_item,
            r"operation takes_item \(POST /things\): .* but no request body is declared",
        ),
        (
            {"method": "GET", "response": Item},
            returns_other,
            r"operation returns_other \(GET /things\): the handler returns Other but the "
            r"declared response is Item",
        ),
        (
            {"method": "GET", "response": Item},
            returns_reply_other,
            r"operation returns_reply_other \(GET /things\): the handler returns "
            r"Reply\[.*Other\] but the declared response is Item",
        ),
        (
            {"method": "GET"},
            returns_item,
            r"operation returns_item \(GET /things\): the handler returns Item but the "
            r"declared response is no response body",
        ),
        (
            {"method": "GET", "response": Item},
            returns_item_or_other,
            r"operation returns_item_or_other \(GET /things\)",
        ),
        (
            {"method": "GET", "response": Item, "operation_id": "listThings"},
            returns_other,
            r"operation listThings \(GET /things\)",
        ),
    ],
)
def test_a_disagreement_is_a_type_error_at_registration(
    options: dict[str, Any], handler: Any, message: str
) -> None:
    api = Api("Example", "1.0.0")
    method = options.pop("method")
    with pytest.raises(TypeError, match=message):
        api.operation(method, "/things", **options)(handler)
    assert api.operations == []


class ItemHandler:
    """A callable object as a handler: checked by its __call__."""

    async def __call__(self, call: Call[None]) -> Item:
        return Item("x")


def test_a_disagreeing_bound_method_or_callable_object_is_refused() -> None:
    api = Api("Example", "1.0.0")
    with pytest.raises(TypeError, match=r"operation item \(GET /things\)"):
        api.operation("GET", "/things", response=Other)(Ops().item)
    with pytest.raises(TypeError, match=r"handler returns Item but .* is Other"):
        api.operation("GET", "/things", response=Other, operation_id="call")(ItemHandler())
    api.operation("GET", "/things", response=Item, operation_id="call")(ItemHandler())
    assert len(api.operations) == 1


@pytest.mark.parametrize(
    ("options", "handler"),
    [
        ({"method": "POST", "request": Item}, takes_item),
        ({"method": "POST", "form": Form}, takes_form_or_nothing),
        ({"method": "GET"}, takes_form_or_nothing),
        ({"method": "GET", "response": Item}, returns_item),
        ({"method": "GET", "response": Item}, returns_special),  # a subclass is an Item
        ({"method": "GET", "response": Item}, returns_stream_or_reply),
        ({"method": "GET"}, takes_nothing),
        ({"method": "GET", "response": Item}, Ops().item),
        ({"method": "POST", "request": Other, "response": Item}, returns_any),
        ({"method": "POST", "request": Other, "response": Item}, unannotated),
    ],
)
def test_agreeing_and_loose_handlers_register(options: dict[str, Any], handler: Any) -> None:
    api = Api("Example", "1.0.0")
    method = options.pop("method")
    api.operation(method, "/things", **options)(handler)
    assert len(api.operations) == 1


def test_a_class_local_to_a_function_is_not_checked_against() -> None:
    # Under `from __future__ import annotations` a local class cannot be resolved from the
    # module: the annotation is accepted as is rather than refusing a correct handler.
    @attrs.frozen
    class Local:
        n: int

    async def local(call: Call[None]) -> Local:
        return Local(1)

    api = Api("Example", "1.0.0")
    api.operation("GET", "/local", response=Local)(local)
    assert len(api.operations) == 1


async def test_agreeing_handlers_answer_over_http(serve: Serve) -> None:
    api = Api("Example", "1.0.0")
    api.operation("GET", "/special", response=Item)(returns_special)
    api.operation("POST", "/items", request=Item)(takes_item)
    client = await serve(api)
    resp = await client.get("/special")
    assert resp.status == 200
    assert await resp.json() == {"name": "x"}
    resp = await client.post("/items", json={"name": "a"})
    assert resp.status == 204
