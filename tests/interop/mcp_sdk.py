"""For the MCP tests: the official MCP Python SDK's own OAuth client meeting a real
``authgate serve`` through an MCP server that ``authgate.client`` protects, as a team would run
them: the server on its own loopback port, the agent's client ID metadata document served over
https by a web server of its own (a test certificate authority the authgate process trusts
through ``SSL_CERT_FILE``), and a person's browser (tests/interop/provider_face.py) carrying the
authorization request the SDK built through authgate's sign-in and consent pages."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import uvicorn
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp.server.mcpserver import MCPServer

from authgate.client import AccessTokenVerifier, ProtectedResource
from authgate.client.mcp import McpTokenVerifier, auth_settings, unavailable_as_503
from tests.support.ports import free_port

SCOPE = "mcp:tools"


def certificate_authority(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A test certificate authority (its certificate's file, for ``SSL_CERT_FILE``) and the
    server context of a ``localhost`` certificate it issued."""
    now = dt.datetime.now(dt.UTC)

    def issued(
        subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, signer: Any, ca: bool
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "authgate test CA")])
    ca = issued("authgate test CA", ca_key, ca_name, ca_key, True)
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = issued("localhost", leaf_key, ca_name, ca_key, False)
    ca_file = folder / "ca.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (folder / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (folder / "leaf-key.pem").write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(folder / "leaf.pem", folder / "leaf-key.pem")
    return ca_file, context


class DocumentHost:
    """The agent's web server: its client ID metadata document at ``/agent.json`` over https
    on a loopback port, ``localhost`` in its URL (the SDK takes only an https URL with a
    path as a client id)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context
        self.port = free_port()
        self.document: dict[str, Any] = {}
        self.fetches = 0
        self._runner: web.AppRunner | None = None

    @property
    def client_id(self) -> str:
        return f"https://localhost:{self.port}/agent.json"

    async def __aenter__(self) -> DocumentHost:
        async def document(request: web.Request) -> web.Response:
            self.fetches += 1
            return web.json_response(self.document, headers={"Cache-Control": "max-age=300"})

        app = web.Application()
        app.router.add_get("/agent.json", document)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self.context).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def mcp_server(verifier: AccessTokenVerifier) -> MCPServer[Any]:
    """The team's MCP server: one tool, every call with a token for it that has ``SCOPE``."""
    server = MCPServer(
        "orders",
        token_verifier=McpTokenVerifier(verifier),
        auth=auth_settings(verifier.resource, required_scopes=[SCOPE]),
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return server


@contextlib.asynccontextmanager
async def serving_mcp(port: int, issuer: str) -> AsyncIterator[str]:
    """The MCP server on ``port`` (streamable HTTP at ``/mcp``), trusting the authgate at
    ``issuer``: its resource identifier, which is its URL."""
    resource_url = f"http://127.0.0.1:{port}/mcp"
    resource = ProtectedResource(resource_url, issuer, scopes_supported=[SCOPE])
    async with AccessTokenVerifier(resource, timeout_seconds=5) as verifier:
        app = unavailable_as_503(mcp_server(verifier).streamable_http_app())
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        try:
            yield resource_url
        finally:
            server.should_exit = True
            await task


def code_and_state(url: str) -> tuple[str, str | None, str | None]:
    """The code, state and issuer (RFC 9207) of an authorization response's redirect."""
    answer = dict(parse_qsl(urlsplit(url).query))
    assert "code" in answer, answer
    return answer["code"], answer.get("state"), answer.get("iss")
