"""The application an Api serves on: a plain aiohttp application (its public middleware and
signal, no subclass, no internals), every failure answered as JSON, no ``Server`` header, and
the Api's hooks (an exception handler, after each successful answer, each request recorded)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints.rest import (
    Api,
    Call,
    Cors,
    HttpError,
    json_response,
    path,
)

SITE = "https://app.example"


def make_api() -> Api:
    api = Api("Example", "1.0.0", max_body_bytes=64)

    @api.operation("GET", "/things/{id}", params=[path("id")], cors=Cors([SITE]))
    async def get_thing(call: Call[None]) -> None:
        if call.path["id"] == "boom":
            raise RuntimeError("unexpected")
        if call.path["id"] == "away":
            raise web.HTTPFound("/elsewhere")
        if call.path["id"] == "teapot":
            raise HttpError(418, {"error": "teapot"})
        if call.path["id"] == "domain":
            raise LookupError("no such thing")

    @api.operation("POST", "/raw", raw_body={"text/plain": None})
    async def raw(call: Call[bytes]) -> None:
        return None

    return api


Client = TestClient[web.Request, web.Application]


async def start(aiohttp_client: Any, app: web.Application) -> Client:
    client: Client = await aiohttp_client(app)
    return client


def test_the_application_is_aiohttp_s_own_with_public_means() -> None:
    # No subclass of aiohttp's Application and no replaced internals: the error handling is a
    # middleware, the Server header goes in an on_response_prepare receiver.
    app = make_api().app()
    assert type(app) is web.Application
    assert len(app.middlewares) == 1
    assert len(app.on_response_prepare) == 1


async def test_every_kind_of_answer_is_json_without_server(
    aiohttp_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_api().app()

    async def page(request: web.Request) -> web.StreamResponse:
        if "fail" in request.query:
            raise ValueError("a page added later fails")
        return web.Response(text="a page added after the Api built the application")

    app.router.add_get("/page", page)
    client = await start(aiohttp_client, app)
    with caplog.at_level(logging.ERROR, logger="authgate.rest"):
        cases = [
            ("GET", "/things/1", 204, None),
            ("GET", "/nowhere", 404, {"error": "not_found", "message": "no such resource"}),
            (
                "DELETE",
                "/things/1",
                405,
                {"error": "method_not_allowed", "message": "method not allowed on this resource"},
            ),
            ("GET", "/things/boom", 500, None),
            ("GET", "/things/teapot", 418, {"error": "teapot"}),
            ("GET", "/page?fail", 500, None),
            ("GET", "/page", 200, None),
        ]
        for method, where, status, body in cases:
            response = await client.request(method, where)
            assert response.status == status, where
            assert "Server" not in response.headers, where
            if status >= 400:
                assert response.content_type == "application/json", where
            if body is not None:
                assert await response.json() == body, where
        response = await client.get("/things/away", allow_redirects=False)
        assert response.status == 302
        assert response.headers["Location"] == "/elsewhere"
        assert "Server" not in response.headers
    assert len([r for r in caplog.records if r.name == "authgate.rest"]) == 2  # the two 500s


async def test_a_chunked_body_past_the_limit_is_413_json(aiohttp_client: Any) -> None:
    client = await start(aiohttp_client, make_api().app())

    async def chunks() -> Any:
        for _ in range(10):
            yield b"0123456789abcdef"

    response = await client.post("/raw", data=chunks(), headers={"Content-Type": "text/plain"})
    assert response.status == 413
    assert await response.json() == {
        "error": "payload_too_large",
        "message": "request body larger than 64 bytes",
    }
    assert "Server" not in response.headers


async def test_cors_headers_on_successes_and_failures(aiohttp_client: Any) -> None:
    client = await start(aiohttp_client, make_api().app())
    for where, status in [("/things/1", 204), ("/things/boom", 500)]:
        response = await client.get(where, headers={"Origin": SITE})
        assert response.status == status
        assert response.headers["Access-Control-Allow-Origin"] == SITE
        assert response.headers["Vary"] == "Origin"
        assert "Server" not in response.headers


async def test_receivers_added_to_on_response_prepare_still_run(
    aiohttp_client: Any,
) -> None:
    app = make_api().app()

    async def stamp(request: web.Request, response: web.StreamResponse) -> None:
        response.headers["X-Stamp"] = "1"

    app.on_response_prepare.append(stamp)
    client = await start(aiohttp_client, app)
    for where in ("/things/1", "/nowhere"):
        response = await client.get(where)
        assert response.headers["X-Stamp"] == "1"
        assert "Server" not in response.headers


async def test_the_api_hooks_run_in_the_error_handling(
    aiohttp_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    api = make_api()
    recorded: list[tuple[str, str | None, int]] = []
    after: list[int] = []

    @api.record_requests
    def record(method: str, route: str | None, status: int, seconds: float) -> None:
        recorded.append((method, route, status))

    @api.after_response
    def after_success(request: web.Request, response: web.StreamResponse) -> None:
        after.append(response.status)

    @api.on_exception
    def answer(request: web.Request, e: Exception) -> web.StreamResponse | None:
        # The application's errors answered in one place; anything else stays a failure.
        if isinstance(e, LookupError):
            return json_response({"error": "not_here", "message": str(e)}, 404)
        return None

    client = await start(aiohttp_client, api.app())
    with caplog.at_level(logging.ERROR, logger="authgate.rest"):
        statuses = []
        for where in ("/things/1", "/things/boom", "/things/away", "/nowhere", "/things/domain"):
            response = await client.get(where, allow_redirects=False)
            statuses.append(response.status)
        assert await response.json() == {"error": "not_here", "message": "no such thing"}
    assert statuses == [204, 500, 302, 404, 404]
    assert recorded == [
        ("GET", "/things/{id}", 204),
        ("GET", "/things/{id}", 500),
        ("GET", "/things/{id}", 302),
        ("GET", None, 404),
        ("GET", "/things/{id}", 404),
    ]
    assert after == [204]  # only answers the handler returned
    # The unexpected failure is logged; the answered domain error is not.
    assert len([r for r in caplog.records if r.name == "authgate.rest"]) == 1


async def test_hooks_see_the_answers_of_the_caller_s_middlewares_errors(
    aiohttp_client: Any,
) -> None:
    # Middlewares given to Api.app run outside the error handling and its hooks.
    seen: list[int] = []

    @web.middleware
    async def outer(request: web.Request, handler: Any) -> web.StreamResponse:
        response: web.StreamResponse = await handler(request)
        seen.append(response.status)
        return response

    api = make_api()
    recorded: list[int] = []
    api.record_requests(lambda method, route, status, seconds: recorded.append(status))
    client = await start(aiohttp_client, api.app(middlewares=[outer]))
    for where in ("/things/1", "/things/boom"):
        await client.get(where)
    assert seen == recorded == [204, 500]


async def test_a_malformed_request_is_answered_by_aiohttp_itself(aiohttp_client: Any) -> None:
    # aiohttp refuses it before any routing: no application hook runs for it, so its answer is
    # aiohttp's own (a 400 that names aiohttp in Server); a proxy in front may drop that.
    client = await start(aiohttp_client, make_api().app())
    assert client.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", client.port)
    writer.write(b"GET /things/1 HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    writer.close()
    assert head.split(b"\r\n")[0].endswith(b" 400 Bad Request")
