"""Calls to a provider's endpoints (``request_json`` on ``provider_session``) against a real
HTTP server: the form sent, the size bound however the body arrives, no redirects, kept
connections, no cookies, certificates verified."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qsl

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from authgate.adapters.http_fetch import (
    FetchError,
    provider_session,
    request_json,
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Endpoint:
    """A one-route HTTP(S) server; records the requests' peers, cookies and forms."""

    def __init__(self, handler: Handler, ssl_context: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.ssl_context = ssl_context
        self.peers: list[tuple[str, int]] = []
        self.cookies: list[dict[str, str]] = []
        self.forms: list[list[tuple[str, str]]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.peers.append(tuple(peer[:2]) if peer else ("", 0))
        self.cookies.append(dict(request.cookies))
        if request.method == "POST":
            self.forms.append(parse_qsl(await request.text(), keep_blank_values=True))
        return await self.handler(request)

    async def start(self) -> Endpoint:
        app = web.Application()
        app.router.add_route("*", "/endpoint", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ssl_context)
        await site.start()
        port = self._runner.addresses[0][1]
        scheme = "https" if self.ssl_context else "http"
        self.url = f"{scheme}://127.0.0.1:{port}/endpoint"
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with provider_session() as http:
        yield http


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Awaitable[Endpoint]]]:
    endpoints: list[Endpoint] = []

    async def start(handler: Handler, ssl_context: ssl.SSLContext | None = None) -> Endpoint:
        endpoint = await Endpoint(handler, ssl_context).start()
        endpoints.append(endpoint)
        return endpoint

    yield start
    for endpoint in endpoints:
        await endpoint.close()


def call(session: aiohttp.ClientSession, url: str, **kwargs: object) -> Awaitable[object]:
    arguments: dict[str, object] = {
        "what": "provider test: endpoint",
        "timeout_seconds": 5.0,
        "max_bytes": 1000,
    }
    arguments.update(kwargs)
    return request_json(session, str(arguments.pop("method", "POST")), url, **arguments)  # type: ignore[arg-type]


async def streamed(
    request: web.Request, pieces: list[bytes], pause: float = 0.0
) -> web.StreamResponse:
    """A chunked answer (no Content-Length), sent in ``pieces``."""
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    for piece in pieces:
        await response.write(piece)
        if pause:
            await asyncio.sleep(pause)
    await response.write_eof()
    return response


# -- the form ------------------------------------------------------------------------------------


async def test_the_form_arrives_as_sent(
    session: aiohttp.ClientSession, serve: Callable[..., Awaitable[Endpoint]]
) -> None:
    async def ok(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    endpoint = await serve(ok)
    form = {
        "grant_type": "authorization_code",
        "code": "4/0Ab+c d%e",
        "redirect_uri": "https://a.example/v1/auth/google/callback?x=1&y=ü",
        "client_secret": "s/e+c=r&e t",
    }
    answer = await call(session, endpoint.url, data=form)
    assert answer.status == 200 and answer.body == {"ok": True}  # type: ignore[attr-defined]
    assert endpoint.forms == [list(form.items())]


# -- the size bound, however the body arrives ----------------------------------------------------


@pytest.mark.parametrize("pause", [0.0, 0.01], ids=["at once", "in pieces"])
async def test_a_chunked_body_over_the_bound_is_refused(
    session: aiohttp.ClientSession, serve: Callable[..., Awaitable[Endpoint]], pause: float
) -> None:
    endpoint = await serve(
        lambda r: streamed(r, [b'{"a":"' + b"x" * 400, b"x" * 400, b"x" * 400 + b'"}'], pause)
    )
    with pytest.raises(
        FetchError, match=r"^provider test: endpoint answered more than 1000 bytes$"
    ):
        await call(session, endpoint.url)


@pytest.mark.parametrize("pause", [0.0, 0.01], ids=["at once", "in pieces"])
async def test_a_chunked_body_within_the_bound_is_read(
    session: aiohttp.ClientSession, serve: Callable[..., Awaitable[Endpoint]], pause: float
) -> None:
    body = b'{"a":"' + b"x" * 992 + b'"}'  # exactly 1,000 bytes
    endpoint = await serve(lambda r: streamed(r, [body[:300], body[300:700], body[700:]], pause))
    answer = await call(session, endpoint.url)
    assert answer.body == {"a": "x" * 992}  # type: ignore[attr-defined]


async def test_a_declared_length_over_the_bound_is_refused(
    session: aiohttp.ClientSession, serve: Callable[..., Awaitable[Endpoint]]
) -> None:
    async def big(request: web.Request) -> web.Response:
        return web.Response(body=b"[" + b"1," * 600 + b"1]", content_type="application/json")

    endpoint = await serve(big)
    with pytest.raises(FetchError, match="answered more than 1000 bytes"):
        await call(session, endpoint.url, method="GET")


async def test_an_empty_or_non_json_body_is_none(
    session: aiohttp.ClientSession, serve: Callable[..., Awaitable[Endpoint]]
) -> None:
    async def empty(request: web.Request) -> web.Response:
        return web.Response(status=204 if request.method == "GET" else 200, text="not json")

    endpoint = await serve(empty)
    assert (await call(session, endpoint.url, method="GET")).body is None  # type: ignore[attr-defined]
    answer = await call(session, endpoint.url)
    assert answer.status == 200 and answer.body is None  # type: ignore[attr-defined]


async def test_a_body_cut_short_is_a_transport_failure(
    session: aiohttp.ClientSession, serve: Callable[..., Awaitable[Endpoint]]
) -> None:
    async def cut(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Length": "500"})
        await response.prepare(request)
        await response.write(b'{"a":')
        assert request.transport is not None
        request.transport.close()
        return response

    endpoint = await serve(cut)
    with pytest.raises(FetchError, match=r"could not be reached \(\w+\)$"):
        await call(session, endpoint.url, method="GET")


# -- redirects, connections, cookies, certificates -----------------------------------------------


async def test_a_redirect_is_not_followed(
    session: aiohttp.ClientSession, serve: Callable[..., Awaitable[Endpoint]]
) -> None:
    async def redirect(request: web.Request) -> web.Response:
        return web.json_response({"error": "moved"}, status=302, headers={"Location": "/else"})

    endpoint = await serve(redirect)
    answer = await call(session, endpoint.url)
    assert answer.status == 302 and len(endpoint.peers) == 1  # type: ignore[attr-defined]


async def test_the_connection_is_kept_and_no_cookie_is_sent_back(
    session: aiohttp.ClientSession, serve: Callable[..., Awaitable[Endpoint]]
) -> None:
    async def with_cookie(request: web.Request) -> web.Response:
        response = web.json_response({"ok": True})
        response.set_cookie("tracker", "user-1", path="/")
        return response

    endpoint = await serve(with_cookie)
    for _ in range(3):
        await call(session, endpoint.url, data={"code": "c"})
        await call(session, endpoint.url, method="GET")
    assert len(set(endpoint.peers)) == 1  # one connection for the six calls
    assert endpoint.cookies == [{}] * 6


def self_signed(folder: Path) -> ssl.SSLContext:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    (folder / "cert.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    return context


async def test_an_untrusted_certificate_is_refused(
    session: aiohttp.ClientSession, serve: Callable[..., Awaitable[Endpoint]], tmp_path: Path
) -> None:
    async def ok(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    endpoint = await serve(ok, self_signed(tmp_path))
    with pytest.raises(
        FetchError, match=r"could not be reached \(ClientConnectorCertificateError\)"
    ):
        await call(session, endpoint.url)
    assert endpoint.peers == []
