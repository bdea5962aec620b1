"""The provider with client ID metadata documents enabled, and a web server on loopback that
serves the documents (each route counts its requests), as a client's own site would."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.app.conftest import MakeService, make_service  # noqa: F401
from tests.fakeidp import FakeIdP, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
from tests.openid.conftest import op, op_config  # noqa: F401
from tests.openid.harness import Op
from tests.support.stores import service_database_url

NATIVE_REDIRECT = "http://127.0.0.1/callback"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@attrs.define
class DocumentSite:
    """A client's site on loopback: ``serve(path, ...)`` puts a route up; ``hits`` counts the
    requests each path received."""

    server: TestServer
    routes: dict[str, Handler] = attrs.field(factory=dict)
    hits: Counter[str] = attrs.field(factory=Counter)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"

    def serve(self, path: str, handler: Handler) -> str:
        self.routes[path] = handler
        return self.url(path)

    def document(self, path: str, *, headers: dict[str, str] | None = None, **members: Any) -> str:
        """Serve the document of a public client at ``path`` (its client_id the path's URL
        unless ``members`` say otherwise); its URL."""
        url = self.url(path)
        body = {"client_id": url, **document_of(url), **members}

        async def answer(_: web.Request) -> web.Response:
            return web.json_response(body, headers=headers or {})

        return self.serve(path, answer)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path] += 1
        handler = self.routes.get(request.path)
        if handler is None:
            raise web.HTTPNotFound()
        return await handler(request)


def document_of(url: str, **members: Any) -> dict[str, Any]:
    """The metadata document of a native MCP client whose client_id is ``url``."""
    return {
        "client_id": url,
        "client_name": "Tool <Runner>",
        "client_uri": "https://tools.example.net",
        "redirect_uris": [NATIVE_REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        **members,
    }


@pytest.fixture
async def site() -> Any:
    """The documents' web server on loopback."""
    app = web.Application()
    holder: list[DocumentSite] = []

    async def route(request: web.Request) -> web.StreamResponse:
        return await holder[0].dispatch(request)

    app.router.add_route("*", "/{tail:.*}", route)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    holder.append(DocumentSite(server))
    yield holder[0]
    await server.close()


def documents_config(site: DocumentSite, **settings: Any) -> dict[str, Any]:
    return {"enabled": True, "allowed_hosts": ["127.0.0.1"], **settings}


MakeOp = Callable[..., Awaitable[Op]]


@pytest.fixture
def make_op(
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
    site: DocumentSite,
) -> MakeOp:
    """``await make_op(**documents_settings, database_url=..., extra={...})``: the provider
    with documents enabled for the site's host."""

    async def start(
        database_url: str = "memory://", extra: dict[str, Any] | None = None, **settings: Any
    ) -> Op:
        config = op_config(
            fake_idp,
            database_url,
            client_metadata_documents=documents_config(site, **settings),
            **(extra or {}),
        )
        client = await make_service(config, clock=idp_clock)
        return Op(client, fake_idp, idp_clock)

    return start


STORES = ("memory", "sqlite", "postgres")


@pytest.fixture(params=STORES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return service_database_url(request, request.param, tmp_path)


def slow(seconds: float, body: dict[str, Any]) -> Handler:
    async def answer(_: web.Request) -> web.Response:
        await asyncio.sleep(seconds)
        return web.json_response(body)

    return answer


def raw(text: str, **headers: str) -> Handler:
    async def answer(_: web.Request) -> web.Response:
        return web.Response(text=text, content_type="application/json", headers=headers)

    return answer
