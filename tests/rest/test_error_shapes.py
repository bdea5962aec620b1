"""Every error answer of the generic layer, over HTTP, in one of two shapes: a declared
parameter's error keeps the contract's wording in ``error`` alone, ``{"error": "missing
required request parameter in query: redirect_uri"}``; every other error the layer answers (a
body too large, of the wrong media type or malformed, no such route or method, a refused
origin, an unexpected failure) has the application's shape, a code and a message."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints.rest import Api, Call, Cors, pattern, query, required

from .conftest import Serve

Client = TestClient[web.Request, web.Application]

SITE = "https://app.example"
CODE = re.compile(r"^[a-z][a-z_]*$")


@attrs.frozen
class Note:
    text: str


@attrs.frozen
class Form:
    text: str | None = None


async def make_client(serve: Serve) -> Client:
    api = Api("Example", "1.0.0", max_body_bytes=64)

    @api.operation(
        "GET",
        "/notes",
        params=[query("redirect_uri", required), query("intent", pattern(r"^(a|b)$"))],
        cors=Cors([SITE]),
    )
    async def list_notes(call: Call[None]) -> None:
        if call.params.first("intent") == "b":
            raise RuntimeError("unexpected")

    @api.operation("POST", "/notes", request=Note)
    async def add_note(call: Call[Note]) -> None:
        return None

    @api.operation("POST", "/forms", form=Form)
    async def post_form(call: Call[Form]) -> None:
        return None

    return await serve(api)


async def chunks() -> AsyncIterator[bytes]:
    for _ in range(10):
        yield b'{"text": "0123456789"}'


JSON = {"Content-Type": "application/json"}
PREFLIGHT = {"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}

# method, target, request options, status, code
SERVICE_ERRORS: list[tuple[str, str, dict[str, Any], int, str]] = [
    ("POST", "/notes", {"data": b'{"text": "x"}', "headers": {"Content-Type": "text/plain"}}, 415,
     "unsupported_media_type"),
    ("POST", "/forms", {"data": b"text=x", "headers": {"Content-Type": "text/plain"}}, 415,
     "unsupported_media_type"),
    ("POST", "/notes", {"data": b"x" * 65, "headers": JSON}, 413, "payload_too_large"),
    ("POST", "/notes", {"data": "chunked", "headers": JSON}, 413, "payload_too_large"),
    ("POST", "/notes", {"data": b"", "headers": JSON}, 400, "invalid_body"),
    ("POST", "/notes", {"data": b"{", "headers": JSON}, 400, "invalid_body"),
    ("POST", "/notes", {"data": b"{}", "headers": JSON}, 400, "invalid_body"),
    ("POST", "/forms", {"data": b"--x\r\n", "headers": {
        "Content-Type": "multipart/form-data; boundary=y"}}, 400, "invalid_body"),
    ("GET", "/nowhere", {}, 404, "not_found"),
    ("DELETE", "/notes", {}, 405, "method_not_allowed"),
    ("OPTIONS", "/notes", {}, 405, "method_not_allowed"),  # not a preflight
    ("OPTIONS", "/notes", {"headers": PREFLIGHT}, 403, "origin_not_allowed"),
    ("GET", "/notes?redirect_uri=x", {"headers": {"Origin": "https://evil.example",
     "Cookie": "session=s"}}, 403, "origin_not_allowed"),
    ("GET", "/notes?redirect_uri=x&intent=b", {}, 500, "internal_error"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "target", "options", "status", "code"),
    SERVICE_ERRORS,
    ids=[f"{m} {t} {s} {c}" for m, t, _, s, c in SERVICE_ERRORS],
)
async def test_service_errors_have_a_code_and_a_message(
    serve: Serve, method: str, target: str, options: dict[str, Any], status: int, code: str
) -> None:
    client = await make_client(serve)
    if options.get("data") == "chunked":
        options = {**options, "data": chunks()}
    response = await client.request(method, target, **options)
    assert response.status == status
    assert response.content_type == "application/json"
    body = await response.json()
    assert set(body) == {"error", "message"}
    assert body["error"] == code
    assert CODE.match(body["error"])
    assert body["message"] and isinstance(body["message"], str)


@pytest.mark.parametrize(
    ("target", "text"),
    [
        ("/notes", "missing required request parameter in query: redirect_uri"),
        ("/notes?redirect_uri=x&intent=c", "invalid parameter value in query: intent"),
    ],
)
async def test_parameter_errors_keep_the_contract_s_wording(
    serve: Serve, target: str, text: str
) -> None:
    client = await make_client(serve)
    response = await client.get(target)
    assert response.status == 400
    assert await response.json() == {"error": text}
