"""Request bodies: strict JSON structuring, content types and the size limit."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints.rest import Api, Call, wire_field

from .conftest import Serve

Client = TestClient[web.Request, web.Application]


@attrs.frozen
class Address:
    city: str
    zip_code: int = wire_field("zipCode")


@attrs.frozen
class Person:
    name: str
    age: int
    active: bool
    height: float
    address: Address
    tags: list[str] = attrs.field(factory=list)
    nickname: str | None = None
    born: dt.datetime | None = None


VALID = {
    "name": "Ada",
    "age": 36,
    "active": True,
    "height": 1.7,
    "address": {"city": "London", "zipCode": 12345},
}


async def person_client(serve: Serve, **api_options: int) -> tuple[Client, list[Person]]:
    api = Api("Example", "1.0.0", **api_options)
    received: list[Person] = []

    @api.operation("POST", "/people", request=Person, response=Person)
    async def create(call: Call[Person]) -> Person:
        received.append(call.body)
        return call.body

    return await serve(api), received


async def test_a_valid_body_is_structured(serve: Serve) -> None:
    client, received = await person_client(serve)
    body = {**VALID, "tags": ["a", "b"], "born": "1815-12-10T00:00:00+00:00", "height": 2}
    resp = await client.post("/people", json=body)
    assert resp.status == 200
    assert received == [
        Person(
            "Ada",
            36,
            True,
            2.0,
            Address("London", 12345),
            ["a", "b"],
            None,
            dt.datetime(1815, 12, 10, tzinfo=dt.UTC),
        )
    ]
    # The response uses wire names and leaves out None-defaulted fields.
    assert await resp.json() == {
        "name": "Ada",
        "age": 36,
        "active": True,
        "height": 2.0,
        "address": {"city": "London", "zipCode": 12345},
        "tags": ["a", "b"],
        "born": "1815-12-10T00:00:00+00:00",
    }


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"age": "36"}, "invalid request body: $.age: expected an integer, got a string"),
        ({"age": True}, "invalid request body: $.age: expected an integer, got a boolean"),
        ({"age": 36.0}, "invalid request body: $.age: expected an integer, got a number"),
        ({"active": 1}, "invalid request body: $.active: expected a boolean, got a number"),
        ({"name": 5}, "invalid request body: $.name: expected a string, got a number"),
        ({"height": "1.7"}, "invalid request body: $.height: expected a number, got a string"),
        ({"tags": "a"}, "invalid request body: $.tags: expected an array, got a string"),
        ({"tags": ["a", 2]}, "invalid request body: $.tags[1]: expected a string, got a number"),
        (
            {"address": {"city": "London", "zipCode": "12345"}},
            "invalid request body: $.address.zipCode: expected an integer, got a string",
        ),
        (
            {"address": {"city": "London"}},
            "invalid request body: $.address.zipCode: required field missing",
        ),
        (
            {"address": {"city": "London", "zipCode": 1, "zip_code": 1}},
            "invalid request body: $.address: unknown field(s): zip_code",
        ),
        ({"extra": 1}, "invalid request body: $: unknown field(s): extra"),
    ],
)
async def test_wrong_types_are_rejected_not_coerced(
    serve: Serve, change: dict[str, object], expected: str
) -> None:
    client, received = await person_client(serve)
    resp = await client.post("/people", json={**VALID, **change})
    assert resp.status == 400
    assert await resp.json() == {"error": "invalid_body", "message": expected}
    assert received == []


async def test_missing_field_is_named(serve: Serve) -> None:
    client, _ = await person_client(serve)
    body = {k: v for k, v in VALID.items() if k != "age"}
    resp = await client.post("/people", json=body)
    assert resp.status == 400
    assert await resp.json() == {
        "error": "invalid_body",
        "message": "invalid request body: $.age: required field missing",
    }


async def test_body_that_is_not_an_object(serve: Serve) -> None:
    client, _ = await person_client(serve)
    resp = await client.post("/people", json=[VALID])
    assert resp.status == 400
    assert await resp.json() == {
        "error": "invalid_body",
        "message": "invalid request body: $: expected an object, got an array",
    }


@pytest.mark.parametrize(
    "raw",
    [b"{", b"{'name': 1}", b"\xff\xfe{", b"nul", b'{"height": NaN}', b'{"height": -Infinity}'],
)
async def test_invalid_json_is_400(serve: Serve, raw: bytes) -> None:
    client, received = await person_client(serve)
    resp = await client.post("/people", data=raw, headers={"Content-Type": "application/json"})
    assert resp.status == 400
    body = await resp.json()
    assert body["error"] == "invalid_body"
    assert body["message"].startswith("invalid JSON in request body")
    assert received == []


async def test_empty_body_is_400(serve: Serve) -> None:
    client, received = await person_client(serve)
    resp = await client.post("/people", data=b"", headers={"Content-Type": "application/json"})
    assert resp.status == 400
    assert await resp.json() == {"error": "invalid_body", "message": "missing request body"}
    assert received == []


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
async def test_non_json_content_type_is_415(serve: Serve, content_type: str) -> None:
    client, received = await person_client(serve)

    resp = await client.post(
        "/people", data=json.dumps(VALID).encode(), headers={"Content-Type": content_type}
    )
    assert resp.status == 415
    assert await resp.json() == {
        "error": "unsupported_media_type",
        "message": "request body must be application/json",
    }
    assert received == []


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-8", "Application/JSON", "application/problem+json"],
)
async def test_json_content_types_are_accepted(serve: Serve, content_type: str) -> None:
    client, received = await person_client(serve)

    resp = await client.post(
        "/people", data=json.dumps(VALID).encode(), headers={"Content-Type": content_type}
    )
    assert resp.status == 200
    assert len(received) == 1


def big_body(size: int) -> bytes:
    """A JSON body of exactly ``size`` bytes that fits the Person type."""

    base = json.dumps({**VALID, "nickname": ""}).encode()
    pad = size - len(base)
    assert pad >= 0
    return json.dumps({**VALID, "nickname": "x" * pad}).encode()


TOO_LARGE = {"error": "payload_too_large", "message": "request body larger than 1048576 bytes"}


async def test_default_limit_is_one_mebibyte_with_content_length(serve: Serve) -> None:
    client, received = await person_client(serve)
    headers = {"Content-Type": "application/json"}
    resp = await client.post("/people", data=big_body(1 << 20), headers=headers)
    assert resp.status == 200
    resp = await client.post("/people", data=big_body((1 << 20) + 1), headers=headers)
    assert resp.status == 413
    assert await resp.json() == TOO_LARGE
    assert len(received) == 1


async def chunks(data: bytes, size: int = 65536) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def test_default_limit_without_content_length(serve: Serve) -> None:
    client, received = await person_client(serve)
    headers = {"Content-Type": "application/json"}
    resp = await client.post("/people", data=chunks(big_body(1 << 20)), headers=headers)
    assert resp.status == 200
    assert resp.request_info.headers.get("Transfer-Encoding") == "chunked"
    resp = await client.post("/people", data=chunks(big_body((1 << 20) + 1)), headers=headers)
    assert resp.status == 413
    assert resp.request_info.headers.get("Transfer-Encoding") == "chunked"
    assert await resp.json() == TOO_LARGE
    assert len(received) == 1


async def test_configured_limit(serve: Serve) -> None:
    client, received = await person_client(serve, max_body_bytes=200)
    headers = {"Content-Type": "application/json"}
    assert (await client.post("/people", data=big_body(200), headers=headers)).status == 200
    for data in (big_body(201), chunks(big_body(201), 50)):
        resp = await client.post("/people", data=data, headers=headers)
        assert resp.status == 413
        assert await resp.json() == {
            "error": "payload_too_large",
            "message": "request body larger than 200 bytes",
        }
    assert len(received) == 1


# -- raw bodies: an operation that reads its own format ---------------------------------------


@attrs.frozen
class Envelope:
    payload: str


async def test_a_raw_body_reaches_the_operation_as_bytes_and_is_documented(
    serve: Serve,
) -> None:
    api = Api("Example", "1.0.0", max_body_bytes=64)
    received: list[bytes] = []

    @api.operation(
        "POST",
        "/events",
        raw_body={"application/secevent+jwt": None, "application/json": Envelope},
        status=202,
    )
    async def receive(call: Call[bytes]) -> None:
        received.append(call.body)

    client = await serve(api)
    sent = b"a.b.c \xff not checked by the layer"
    answer = await client.post("/events", data=sent, headers={"Content-Type": "text/plain"})
    assert answer.status == 202
    assert received == [sent]
    too_big = await client.post("/events", data=b"x" * 65)
    assert too_big.status == 413

    operation = api.openapi()["paths"]["/events"]["post"]
    content = operation["requestBody"]["content"]
    assert content["application/secevent+jwt"]["schema"] == {"type": "string"}
    assert content["application/json"]["schema"]["properties"] == {"payload": {"type": "string"}}
    assert {"202", "413"} <= set(operation["responses"])


def test_a_raw_body_excludes_the_declared_ones() -> None:
    api = Api("Example", "1.0.0")
    with pytest.raises(ValueError, match="exclusive"):

        @api.operation("POST", "/both", request=Envelope, raw_body={"text/plain": None})
        async def both(call: Call[Envelope]) -> None: ...
