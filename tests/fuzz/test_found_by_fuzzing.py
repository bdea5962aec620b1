"""What the fuzz run found in the REST layer, pinned by fast in-process tests.

* A form body that cannot be parsed (``multipart/form-data`` without a boundary, a part whose
  headers are not valid HTTP) answered 500; it is the client's error: 400.
* A static path beside a templated one (``/v1/auth/logout`` beside ``/v1/auth/{provider}``):
  OpenAPI matches concrete paths before templated ones, so the static path's resource has only
  its own methods. The server served ``GET /v1/auth/logout`` with the templated operation and
  advertised ``Allow: GET,POST``; now other methods get 405 with ``Allow: POST``.
"""

from __future__ import annotations

from typing import Any

import attrs
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints.rest import Api, Call, path

Client = TestClient[web.Request, web.Application]


@attrs.frozen
class Form:
    code: str | None = None
    state: str | None = None


@attrs.frozen
class Named:
    name: str


def make_api() -> Api:
    api = Api("Found", "1.0.0")

    @api.operation("POST", "/things/{name}/form", params=[path("name")], form=Form, status=204)
    async def post_form(call: Call[Form]) -> None:
        return None

    @api.operation("GET", "/things/{name}", params=[path("name")], response=Named)
    async def get_thing(call: Call[None]) -> Named:
        return Named(call.path["name"])

    @api.operation("POST", "/things/special", status=204)
    async def special(call: Call[None]) -> None:
        return None

    return api


async def client(aiohttp_client: Any) -> Client:
    c: Client = await aiohttp_client(make_api().app())
    return c


async def test_multipart_without_boundary_is_400(aiohttp_client: Any) -> None:
    c = await client(aiohttp_client)
    response = await c.post(
        "/things/x/form",
        data=b"code=a&state=b",
        headers={"Content-Type": "multipart/form-data"},
    )
    assert response.status == 400
    assert response.content_type == "application/json"
    assert "error" in await response.json()


async def test_multipart_with_an_invalid_part_header_is_400(aiohttp_client: Any) -> None:
    c = await client(aiohttp_client)
    boundary = "b0undary"
    body = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="a\x00b"\r\n\r\n'
        "value\r\n"
        f"--{boundary}--\r\n"
    ).encode()
    response = await c.post(
        "/things/x/form",
        data=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert response.status == 400
    assert "error" in await response.json()


async def test_a_well_formed_multipart_form_is_still_read(aiohttp_client: Any) -> None:
    c = await client(aiohttp_client)
    boundary = "b0undary"
    body = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="code"\r\n\r\n'
        "abc\r\n"
        f"--{boundary}--\r\n"
    ).encode()
    response = await c.post(
        "/things/x/form",
        data=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert response.status == 204


async def test_a_static_path_has_only_its_own_methods(aiohttp_client: Any) -> None:
    c = await client(aiohttp_client)
    for method in ("GET", "OPTIONS", "PUT", "DELETE"):
        response = await c.request(method, "/things/special")
        assert response.status == 405, method
        assert response.headers["Allow"] == "POST", method
        assert (await response.json())["error"] == "method_not_allowed"
    assert (await c.post("/things/special")).status == 204
    # the templated sibling still serves every other value
    response = await c.get("/things/other")
    assert response.status == 200
    assert await response.json() == {"name": "other"}
