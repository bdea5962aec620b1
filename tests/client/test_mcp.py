"""An MCP server (the official MCP Python SDK) protected by authgate through authgate.client's
token verifier: served over streamable HTTP on a loopback port with uvicorn and called by the
SDK's own client, with a real access token of a running authgate for this server (the tool
answers), one for another resource, and none (refused with 401 and ``resource_metadata``;
the metadata names authgate as the authorization server)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer

from authgate.client import AccessTokenVerifier, ProtectedResource
from authgate.client.mcp import McpTokenVerifier, auth_settings
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


@pytest.fixture
async def mcp_url(service: Authgate) -> AsyncIterator[str]:
    resource = ProtectedResource(RESOURCE, issuer_of(service), scopes_supported=["profile"])
    async with AccessTokenVerifier(resource) as verifier:
        app = mcp_server(verifier).streamable_http_app()
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


class Recorder:
    """The status and ``WWW-Authenticate`` of every answer the MCP client receives."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, str | None]] = []

    async def __call__(self, response: httpx2.Response) -> None:
        self.answers.append((response.status_code, response.headers.get("WWW-Authenticate")))


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


async def refused(url: str, token: str | None) -> tuple[int, str | None]:
    recorder = Recorder()
    with pytest.raises(ExceptionGroup) as failed:
        await asyncio.wait_for(call_add(url, token, recorder), 30)
    # The SDK's client gives up on the 401: the error of the initialize request.
    assert failed.group_contains(MCPError)
    assert recorder.answers, "the server was never reached"
    return recorder.answers[0]


async def test_a_token_for_another_resource_is_refused(mcp_url: str, service: Authgate) -> None:
    status, challenge = await refused(mcp_url, await access_token(service, "other"))
    assert status == 401
    assert challenge is not None
    assert challenge.startswith('Bearer error="invalid_token"')
    assert f'resource_metadata="{METADATA_URL}"' in challenge


async def test_no_token_is_refused_and_the_metadata_names_authgate(
    mcp_url: str, service: Authgate
) -> None:
    status, challenge = await refused(mcp_url, None)
    assert status == 401
    assert challenge is not None and f'resource_metadata="{METADATA_URL}"' in challenge
    async with httpx2.AsyncClient() as http:
        metadata = (await http.get(METADATA_URL)).json()
    assert metadata["resource"] == RESOURCE
    assert metadata["authorization_servers"] == [issuer_of(service)]
    assert metadata["scopes_supported"] == ["profile"]
