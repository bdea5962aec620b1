"""The three programs of docs/integration.md, "Protecting an API or an MCP server", work as
written: each is taken from the page, loaded with ``AUTHGATE_ISSUER`` and ``RESOURCE_URL`` set
(the page's way of configuring them), served on a loopback port and called over HTTP with a
real access token of a running authgate, and without one."""

from __future__ import annotations

import asyncio
import contextlib
import re
import runpy
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
import pytest
import uvicorn
from aiohttp import web
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.client.resource_support import access_token, authgate_for, issuer_of
from tests.client.support import Authgate, claims_of
from tests.support.ports import free_ports

DOC = Path(__file__).parents[2] / "docs" / "integration.md"
SECTION = "## Protecting an API or an MCP server"
PORTS = dict(zip(("api_aiohttp.py", "api_fastapi.py", "mcp_server.py"), free_ports(3), strict=True))
PATHS = {"api_aiohttp.py": "/api", "api_fastapi.py": "/api", "mcp_server.py": "/mcp"}


def resource_of(name: str) -> str:
    return f"http://127.0.0.1:{PORTS[name]}{PATHS[name]}"


def programs() -> dict[str, str]:
    text = DOC.read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    found = dict(re.findall(r'```python title="([^"]+)"\n(.*?)```', section, re.S))
    assert set(found) == set(PORTS), found.keys()
    return found


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Authgate]:
    authgate = authgate_for(tmp_path_factory.mktemp("authgate"), *map(resource_of, PORTS))
    authgate.start()
    try:
        yield authgate
    finally:
        authgate.stop()


def load(
    name: str, service: Authgate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The program's globals (``app``, ``verifier``...), as ``python <name>`` would build them
    (without running it)."""
    path = tmp_path / name
    path.write_text(programs()[name])
    monkeypatch.setenv("AUTHGATE_ISSUER", issuer_of(service))
    monkeypatch.setenv("RESOURCE_URL", resource_of(name))
    return runpy.run_path(str(path))


@contextlib.asynccontextmanager
async def serving(program: dict[str, Any], port: int) -> AsyncIterator[None]:
    """The program's ``app`` on ``port``."""
    app = program["app"]
    try:
        if isinstance(app, web.Application):
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            try:
                yield
            finally:
                await runner.cleanup()
            return
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        try:
            yield
        finally:
            server.should_exit = True
            await task
    finally:
        await program["verifier"].close()  # the MCP example's runs until the process ends


@pytest.mark.parametrize("name", ["api_aiohttp.py", "api_fastapi.py"])
async def test_the_api_examples(
    name: str, service: Authgate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    resource = resource_of(name)
    token = await access_token(service, resource)
    base = resource.removesuffix("/api")
    metadata_url = f"{base}/.well-known/oauth-protected-resource/api"
    bearer = {"Authorization": f"Bearer {token}"}
    async with (
        serving(load(name, service, tmp_path, monkeypatch), PORTS[name]),
        aiohttp.ClientSession() as http,
    ):
        async with http.get(resource + "/me", headers=bearer) as r:
            assert r.status == 200, await r.text()
            assert await r.json() == {"account": claims_of(token)["sub"], "client": resource}
        async with http.get(resource + "/me") as r:
            assert r.status == 401
            assert r.headers["WWW-Authenticate"] == f'Bearer resource_metadata="{metadata_url}"'
        async with http.get(metadata_url) as r:
            metadata = await r.json()
    assert metadata == {
        "resource": resource,
        "authorization_servers": [issuer_of(service)],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["profile"],
        "resource_name": "Orders",
    }


async def test_the_mcp_example(
    service: Authgate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "mcp_server.py"
    resource = resource_of(name)
    token = await access_token(service, resource)
    headers = {"Authorization": f"Bearer {token}"}
    async with serving(load(name, service, tmp_path, monkeypatch), PORTS[name]):
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            streamable_http_client(resource, http_client=http) as (read, write),
            ClientSession(read, write, read_timeout_seconds=10) as session,
        ):
            await session.initialize()
            result = await session.call_tool("add", {"a": 20, "b": 22})
        async with httpx2.AsyncClient() as http:
            refused = await http.post(resource, json={})
    assert result.structured_content == {"result": 42}
    assert refused.status_code == 401
    metadata_url = resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert f'resource_metadata="{metadata_url}"' in refused.headers["WWW-Authenticate"]
