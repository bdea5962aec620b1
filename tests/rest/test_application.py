"""The application an Api serves on (rest.application): every failure answered as JSON and no
``Server`` header, the same on the fast path (error handling and header removal inside aiohttp's
own per-request steps, no middleware, no signal) and on the public one it falls back to when
aiohttp's internals are not as expected; and the fast path is the one taken with the installed
aiohttp."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints.rest import (
    Api,
    Call,
    Cors,
    HttpError,
    RestApplication,
    install_request_hooks,
    path,
)
from authgate.entrypoints.rest import api as api_module
from authgate.entrypoints.rest.application import FAST_PATH

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

    @api.operation("POST", "/raw", raw_body={"text/plain": None})
    async def raw(call: Call[bytes]) -> None:
        return None

    return api


@pytest.fixture(params=["fast", "public"])
def fast(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[bool]:
    """Both ways of building the application: the fast path, and the public means (a
    middleware and an ``on_response_prepare`` receiver) used when aiohttp's internals differ."""
    on = request.param == "fast"
    monkeypatch.setattr(api_module, "FAST_PATH", on)
    yield on


Client = TestClient[web.Request, web.Application]


async def start(aiohttp_client: Any, app: web.Application) -> Client:
    client: Client = await aiohttp_client(app)
    return client


def test_the_installed_aiohttp_takes_the_fast_path() -> None:
    # Should an aiohttp upgrade change the internals the fast path uses, this fails (and the
    # service falls back to the public means, about a tenth slower per request).
    assert FAST_PATH
    app = make_api().app()
    assert isinstance(app, RestApplication)
    assert list(app.middlewares) == []
    assert len(app.on_response_prepare) == 0


async def test_every_kind_of_answer_is_json_without_server(
    aiohttp_client: Any, fast: bool, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_api().app()
    assert isinstance(app, RestApplication) is fast

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


async def test_a_chunked_body_past_the_limit_is_413_json(aiohttp_client: Any, fast: bool) -> None:
    client = await start(aiohttp_client, make_api().app())

    async def chunks() -> Any:
        for _ in range(10):
            yield b"0123456789abcdef"

    response = await client.post("/raw", data=chunks(), headers={"Content-Type": "text/plain"})
    assert response.status == 413
    assert await response.json() == {"error": "request body larger than 64 bytes"}
    assert "Server" not in response.headers


async def test_cors_headers_on_successes_and_failures(aiohttp_client: Any, fast: bool) -> None:
    client = await start(aiohttp_client, make_api().app())
    for where, status in [("/things/1", 204), ("/things/boom", 500)]:
        response = await client.get(where, headers={"Origin": SITE})
        assert response.status == status
        assert response.headers["Access-Control-Allow-Origin"] == SITE
        assert response.headers["Vary"] == "Origin"
        assert "Server" not in response.headers


async def test_receivers_added_to_on_response_prepare_still_run(
    aiohttp_client: Any, fast: bool
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


async def test_hooks_fold_into_the_error_handling(aiohttp_client: Any) -> None:
    app = make_api().app()
    recorded: list[tuple[str, str | None, int]] = []
    after: list[int] = []

    def record(method: str, route: str | None, status: int, seconds: float) -> None:
        recorded.append((method, route, status))

    def after_success(request: web.Request, response: web.StreamResponse) -> None:
        after.append(response.status)

    assert install_request_hooks(app, after=after_success, record=record)
    client = await start(aiohttp_client, app)
    for where in ("/things/1", "/things/boom", "/things/away", "/nowhere"):
        await client.get(where, allow_redirects=False)
    assert recorded == [
        ("GET", "/things/{id}", 204),
        ("GET", "/things/{id}", 500),
        ("GET", "/things/{id}", 302),
        ("GET", None, 404),
    ]
    assert after == [204]  # only answers the handler returned
    with pytest.raises(RuntimeError, match="frozen"):
        install_request_hooks(app, record=record)


def test_hooks_are_left_to_the_caller_where_the_error_handling_is_a_middleware() -> None:
    # Middlewares of the caller's (tracing) run outside the error handling: a middleware too.
    async def outer(request: web.Request, handler: Any) -> web.StreamResponse:
        response: web.StreamResponse = await handler(request)
        return response

    app = make_api().app(middlewares=[web.middleware(outer)])
    assert not install_request_hooks(app, after=lambda request, response: None)
    assert not install_request_hooks(web.Application())


async def test_a_malformed_request_is_answered_without_server(aiohttp_client: Any) -> None:
    # aiohttp answers it itself, before any routing (the public means never saw it).
    client = await start(aiohttp_client, make_api().app())
    assert client.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", client.port)
    writer.write(b"GET /things/1 HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    writer.close()
    assert head.split(b"\r\n")[0].endswith(b" 400 Bad Request")
    assert b"\r\nserver:" not in head.lower()
