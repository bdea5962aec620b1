"""An MCP server (the official MCP Python SDK) protected by authgate through authgate.client's
token verifier: served over streamable HTTP on a loopback port with uvicorn and called by the
SDK's own client, with a real access token of a running authgate for this server (the tool
answers), one for another resource, and none (refused with 401 and ``resource_metadata``;
the metadata names authgate as the authorization server)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer

from authgate.client import AccessTokenVerifier, ProtectedResource
from authgate.client.mcp import McpTokenVerifier, auth_settings, unavailable_as_503
from tests.client.resource_support import access_token, authgate_for, issuer_of
from tests.client.support import Authgate
from tests.support.ports import free_port

PORT = free_port()
BASE = f"http://127.0.0.1:{PORT}"
RESOURCE = f"{BASE}/mcp"
METADATA_URL = f"{BASE}/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Authgate]:
    authgate = authgate_for(tmp_path_factory.mktemp("authgate"), RESOURCE)
    authgate.start()
    try:
        yield authgate
    finally:
        authgate.stop()


def mcp_server(verifier: AccessTokenVerifier) -> MCPServer[Any]:
    """The server as a team would write it."""
    server = MCPServer(
        "orders",
        token_verifier=McpTokenVerifier(verifier),
        auth=auth_settings(verifier.resource, required_scopes=["profile"]),
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return server


@contextlib.asynccontextmanager
async def serving(issuer: str) -> AsyncIterator[str]:
    """The MCP server on :data:`PORT`, trusting the authgate at ``issuer``: its URL."""
    resource = ProtectedResource(RESOURCE, issuer, scopes_supported=["profile"])
    async with AccessTokenVerifier(resource, timeout_seconds=2) as verifier:
        app = unavailable_as_503(mcp_server(verifier).streamable_http_app())
        config = uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning")
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        try:
            yield RESOURCE
        finally:
            server.should_exit = True
            await task


@pytest.fixture
async def mcp_url(service: Authgate) -> AsyncIterator[str]:
    async with serving(issuer_of(service)) as url:
        yield url


class Recorder:
    """The status and headers of every answer the MCP client receives."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, httpx2.Headers]] = []

    async def __call__(self, response: httpx2.Response) -> None:
        self.answers.append((response.status_code, response.headers))


async def call_add(url: str, token: str | None, recorder: Recorder) -> Any:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, event_hooks={"response": [recorder]}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, read_timeout_seconds=10) as session,
    ):
        await session.initialize()
        return await session.call_tool("add", {"a": 2, "b": 3})


async def test_a_token_for_this_server_calls_the_tool(mcp_url: str, service: Authgate) -> None:
    token = await access_token(service, RESOURCE)
    recorder = Recorder()
    result = await asyncio.wait_for(call_add(mcp_url, token, recorder), 30)
    assert not result.is_error
    assert result.structured_content == {"result": 5}
    assert all(status < 400 for status, _ in recorder.answers), recorder.answers


async def refused(url: str, token: str | None) -> tuple[int, httpx2.Headers]:
    recorder = Recorder()
    with pytest.raises(ExceptionGroup) as failed:
        await asyncio.wait_for(call_add(url, token, recorder), 30)
    # The SDK's client gives up on the 401: the error of the initialize request.
    assert failed.group_contains(MCPError)
    assert recorder.answers, "the server was never reached"
    return recorder.answers[0]


async def test_a_token_for_another_resource_is_refused(mcp_url: str, service: Authgate) -> None:
    status, headers = await refused(mcp_url, await access_token(service, "other"))
    challenge = headers.get("WWW-Authenticate")
    assert status == 401
    assert challenge is not None
    assert challenge.startswith('Bearer error="invalid_token"')
    assert f'resource_metadata="{METADATA_URL}"' in challenge


async def test_no_token_is_refused_and_the_metadata_names_authgate(
    mcp_url: str, service: Authgate
) -> None:
    status, headers = await refused(mcp_url, None)
    challenge = headers.get("WWW-Authenticate")
    assert status == 401
    assert challenge is not None and f'resource_metadata="{METADATA_URL}"' in challenge
    async with httpx2.AsyncClient() as http:
        metadata = (await http.get(METADATA_URL)).json()
    assert metadata["resource"] == RESOURCE
    assert metadata["authorization_servers"] == [issuer_of(service)]
    assert metadata["scopes_supported"] == ["profile"]


async def test_authgate_unreachable_is_503(service: Authgate) -> None:
    token = await access_token(service, RESOURCE)
    async with serving(f"http://127.0.0.1:{free_port()}") as url:
        status, headers = await refused(url, token)
    assert (status, headers["Retry-After"]) == (503, "5")
    assert "WWW-Authenticate" not in headers
