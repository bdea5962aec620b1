"""authgate as the authorization server of a team's MCP server, proved with the official MCP
Python SDK (``mcp`` on PyPI), which nobody here wrote: the SDK's own OAuth client meets the MCP
server's 401, finds authgate from the server's protected resource metadata (RFC 9728) and
authgate's authorization server metadata (RFC 8414), becomes a client of authgate by its client
ID metadata document (first test) or by dynamic registration (second), signs a person in with
PKCE and ``resource`` (RFC 8707) through authgate's sign-in and consent pages, then calls the
tool. The token names the server as its audience: another MCP server refuses it.

A real ``authgate serve`` with no client in its configuration file (an agents-only provider),
configured by docs/openid-provider.md's "Protect an MCP server in minutes" block (the MCP
servers' loopback addresses put in), on SQLite and PostgreSQL; the MCP server on uvicorn,
protected by ``authgate.client``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import textwrap
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.interop.conftest import database_url_for
from tests.interop.mcp_sdk import (
    SCOPE,
    DocumentHost,
    certificate_authority,
    code_and_state,
    serving_mcp,
)
from tests.interop.provider_face import Provider, provider
from tests.support.ports import free_port

CALLBACK = f"http://127.0.0.1:{free_port()}/callback"  # where the browser stops: never served
PAGE = Path(__file__).parents[2] / "docs" / "openid-provider.md"
SECTION = "## Protect an MCP server in minutes"
DOCUMENTED_SERVER = "https://mcp.example.com/mcp"


def documented(mcp_url: str, other_url: str) -> dict[str, Any]:
    """The page's configuration block, the MCP server's address put in (and a second MCP
    server's beside it, for the token it must refuse), no client under ``clients:``."""
    text = PAGE.read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    [block] = re.findall(r'```yaml title="config.yaml"\n(.*?)```', section, re.S)
    config: dict[str, Any] = yaml.safe_load(textwrap.dedent(block))
    for part in ("client_metadata_documents", "registration"):
        assert config[part]["resources"] == [DOCUMENTED_SERVER], config[part]
        config[part]["resources"] = [mcp_url, other_url]
    return {"clients": {}, **config}


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return database_url_for(request, tmp_path)


class Storage:
    """The SDK's token storage, in memory (the agent's keychain)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Agent:
    """The agent: the SDK's OAuth client, whose browser is the person's (the redirect handler
    carries the authorization URL through authgate's pages to :data:`CALLBACK`)."""

    def __init__(self, op: Provider, mcp_url: str, document_url: str | None = None) -> None:
        self.op = op
        self.storage = Storage()
        self.browser = op.browser()
        self.authorization_urls: list[str] = []
        self.returned: list[str] = []
        self.auth = OAuthClientProvider(
            server_url=mcp_url,
            client_metadata=OAuthClientMetadata(
                redirect_uris=[CALLBACK],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
                client_name="Test agent",
                scope=SCOPE,
            ),
            storage=self.storage,
            redirect_handler=self.redirect,
            callback_handler=self.callback,
            client_metadata_url=document_url,
        )

    async def redirect(self, url: str) -> None:
        self.authorization_urls.append(url)
        self.returned.append(await self.op.authorize(self.browser, url, back_to=CALLBACK))

    async def callback(self) -> AuthorizationCodeResult:
        code, state, issuer = code_and_state(self.returned[-1])
        return AuthorizationCodeResult(code=code, state=state, iss=issuer)

    async def add(self, mcp_url: str, a: int, b: int) -> Any:
        async with (
            httpx2.AsyncClient(auth=self.auth, timeout=30) as http,
            streamable_http_client(mcp_url, http_client=http) as (read, write),
            ClientSession(read, write, read_timeout_seconds=30) as session,
        ):
            await session.initialize()
            return await session.call_tool("add", {"a": a, "b": b})

    async def close(self) -> None:
        await self.browser.close()


async def apps_of(agent: Agent) -> dict[str, str | None]:
    """The person's applications page, as their browser reads it: client id and name."""
    answer = await agent.browser.authgate(
        "GET", "/v1/account/apps", headers={"Accept": "application/json"}
    )
    assert answer.status == 200, answer.text
    return {app["clientId"]: app["name"] for app in json.loads(answer.text)["apps"]}


def claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert isinstance(decoded, dict)
    return decoded


async def call_with(mcp_url: str, token: str) -> int:
    """The status the MCP server answers a plain MCP initialize with ``token``."""
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(
            mcp_url,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
    return answer.status_code


async def proved(op: Provider, agent: Agent, mcp_url: str, other_url: str) -> dict[str, Any]:
    """The agent calls the tool (the whole OAuth dance on the way); what its token says, once
    checked: the server's audience and scope, and refused by the other MCP server."""
    result = await agent.add(mcp_url, 2, 3)
    assert not result.is_error, result
    assert result.structured_content == {"result": 5}
    [url] = agent.authorization_urls
    asked = dict(httpx2.URL(url).params)
    # The SDK asks for the server's scope (and offline_access, which authgate offers).
    assert asked["resource"] == mcp_url and SCOPE in asked["scope"].split()
    assert asked["code_challenge_method"] == "S256"
    assert agent.storage.tokens is not None
    said = claims(agent.storage.tokens.access_token)
    assert said["aud"] == mcp_url
    assert SCOPE in said["scope"].split()
    assert agent.storage.tokens.refresh_token  # the agent keeps its access without asking
    assert said["iss"] == op.issuer
    # A token for this server is no token for another one (RFC 8707, RFC 9068).
    assert await call_with(other_url, agent.storage.tokens.access_token) == 401
    # A second call reuses the token: no second authorization.
    again = await agent.add(mcp_url, 20, 22)
    assert again.structured_content == {"result": 42}
    assert len(agent.authorization_urls) == 1
    return said


async def test_an_agent_described_by_its_metadata_document_calls_a_tool(
    tmp_path: Path, database_url: str
) -> None:
    ca_file, context = certificate_authority(tmp_path)
    mcp_port, other_port = free_port(), free_port()
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    other_url = f"http://127.0.0.1:{other_port}/mcp"
    async with DocumentHost(context) as host:
        host.document = {
            "client_id": host.client_id,
            "client_name": "Test agent",
            "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        overrides = documented(mcp_url, other_url)
        env = {**os.environ, "SSL_CERT_FILE": str(ca_file)}
        async with (
            provider(tmp_path, database_url, overrides=overrides, env=env) as op,
            serving_mcp(mcp_port, op.issuer),
            serving_mcp(other_port, op.issuer),
        ):
            agent = Agent(op, mcp_url, document_url=host.client_id)
            try:
                said = await proved(op, agent, mcp_url, other_url)
                # The person's applications page lists the agent, whatever its origin.
                assert await apps_of(agent) == {host.client_id: "Test agent"}
            finally:
                await agent.close()
            assert said["client_id"] == host.client_id
            assert host.fetches >= 1
            # The person was asked, with the document's host shown.
            [page] = op.consent_pages
            assert "localhost" in page and "Test agent" in page


async def test_an_agent_registers_itself_and_calls_a_tool(
    tmp_path: Path, database_url: str
) -> None:
    mcp_port, other_port = free_port(), free_port()
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    other_url = f"http://127.0.0.1:{other_port}/mcp"
    overrides = documented(mcp_url, other_url)
    async with (
        provider(tmp_path, database_url, overrides=overrides) as op,
        serving_mcp(mcp_port, op.issuer),
        serving_mcp(other_port, op.issuer),
    ):
        agent = Agent(op, mcp_url)
        try:
            said = await proved(op, agent, mcp_url, other_url)
            assert await apps_of(agent) == {said["client_id"]: "Test agent"}
        finally:
            await agent.close()
        assert agent.storage.client_info is not None
        assert said["client_id"] == agent.storage.client_info.client_id
        assert len(op.consent_pages) == 1


async def test_without_a_token_the_server_points_at_authgate(tmp_path: Path) -> None:
    """What the SDK starts from: the 401's ``resource_metadata``, and the metadata's
    authorization server, whose RFC 8414 document says how to become a client."""
    mcp_port = free_port()
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    overrides = {
        "clients": {},
        "registration": {"enabled": True, "policy": "open", "resources": [mcp_url]},
    }
    async with (
        provider(tmp_path, f"sqlite:///{tmp_path / 'authgate.db'}", overrides=overrides) as op,
        serving_mcp(mcp_port, op.issuer),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        refused = await http.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        challenge = refused.headers["WWW-Authenticate"]
        metadata_url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
        metadata = (await http.get(metadata_url)).json()
        assert metadata["resource"] == mcp_url
        assert metadata["authorization_servers"] == [op.issuer]
        server = (await http.get(f"{op.issuer}/.well-known/oauth-authorization-server")).json()
        assert server["issuer"] == op.issuer
        assert server["registration_endpoint"] == f"{op.issuer}/oauth2/register"
        assert "S256" in server["code_challenge_methods_supported"]
