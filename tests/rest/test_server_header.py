"""No response of an Api's application names the server software: aiohttp's default
``Server: Python/3.x aiohttp/3.x`` is removed from every kind of answer."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from authgate.entrypoints.rest import Api, Call, query, required


async def test_no_server_header_on_any_kind_of_response(aiohttp_client: Any) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/ok", params=[query("q", required)])
    async def ok(call: Call[None]) -> None:
        return None

    @api.operation("GET", "/boom")
    async def boom(call: Call[None]) -> None:
        raise RuntimeError("the operation failed")

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"streamed")
        return response

    app = api.app()
    # A route added after the Api built the application (as the demo pages are) is covered too.
    app.router.add_get("/stream", stream)
    app_client = await aiohttp_client(app)
    for method, path, status in [
        ("GET", "/ok?q=1", 204),
        ("GET", "/ok", 400),
        ("GET", "/nowhere", 404),
        ("POST", "/ok?q=1", 405),
        ("GET", "/boom", 500),
        ("GET", "/openapi.json", 200),
        ("GET", "/health/readiness", 200),
        ("GET", "/stream", 200),
    ]:
        response = await app_client.request(method, path)
        assert response.status == status, path
        assert "Server" not in response.headers, path
