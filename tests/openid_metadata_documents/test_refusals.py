"""Documents that register no client: the authorization endpoint answers its error page (never
a redirect to a URI the document named), the token endpoint invalid_client, and the reason is
logged. Too big (said up front or found while streaming), too slow (headers or body), a
redirect (never followed), a client_id other than the URL, a secret in it, not JSON; a flood
of fresh URLs is not fetched beyond the per-host budget."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiohttp import ClientResponse, web

from .conftest import NATIVE_REDIRECT, DocumentSite, MakeOp, document_of, raw, slow
from .test_code_flow import native

LOG = "authgate.openid"


async def refused(response: ClientResponse) -> str:
    """The error page of a client that is not registered (no redirect)."""
    assert response.status == 400, await response.text()
    assert response.content_type == "text/html"
    assert "Location" not in response.headers
    return await response.text()


def logged(caplog: pytest.LogCaptureFixture, url: str) -> str:
    lines = [r.getMessage() for r in caplog.records if r.name == LOG and url in r.getMessage()]
    assert lines, [r.getMessage() for r in caplog.records]
    return "\n".join(lines)


async def test_a_mismatched_client_id_registers_no_client(
    make_op: MakeOp, site: DocumentSite, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOG)
    op = await make_op()
    url = site.document("/clients/other.json", client_id=site.url("/clients/real.json"))
    await refused(await op.authorize(native(url)))
    assert "its client_id is not the URL it was fetched from" in logged(caplog, url)
    token = await op.token(
        {"grant_type": "authorization_code", "code": "x" * 43, "redirect_uri": NATIVE_REDIRECT},
        client_id=url,
        secret=None,
    )
    assert token.status == 401 and (await token.json())["error"] == "invalid_client"


@pytest.mark.parametrize(
    ("members", "reason"),
    [
        ({"client_secret": "s" * 40}, "holds client_secret"),
        ({"token_endpoint_auth_method": "client_secret_basic"}, "token_endpoint_auth_method"),
        ({"redirect_uris": []}, "needs redirect_uris"),
        ({"redirect_uris": ["http://example.com/cb"]}, "http is only for loopback"),
        ({"grant_types": ["client_credentials"]}, "grant_types must be authorization_code"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "needs jwks_uri or jwks"),
        ({"logo_uri": "javascript:alert(1)"}, "logo_uri must be an https URL"),
    ],
)
async def test_a_bad_document_registers_no_client(
    make_op: MakeOp,
    site: DocumentSite,
    caplog: pytest.LogCaptureFixture,
    members: dict[str, object],
    reason: str,
) -> None:
    caplog.set_level(logging.INFO, LOG)
    op = await make_op()
    url = site.document("/clients/bad.json", **members)
    await refused(await op.authorize(native(url)))
    assert reason in logged(caplog, url)


async def test_an_error_status_registers_no_client(
    make_op: MakeOp, site: DocumentSite, caplog: pytest.LogCaptureFixture
) -> None:
    op = await make_op()
    url = site.url("/clients/missing.json")  # the site answers 404
    await refused(await op.authorize(native(url)))
    assert "answered HTTP 404" in logged(caplog, url)


async def test_not_json_registers_no_client(
    make_op: MakeOp, site: DocumentSite, caplog: pytest.LogCaptureFixture
) -> None:
    op = await make_op()
    url = site.serve("/clients/tool.json", raw("<html>not json</html>"))
    await refused(await op.authorize(native(url)))
    assert "is not JSON" in logged(caplog, url)


async def test_a_document_too_big_is_refused(
    make_op: MakeOp, site: DocumentSite, caplog: pytest.LogCaptureFixture
) -> None:
    op = await make_op(max_bytes=1024)
    # said up front (Content-Length)
    padded = site.document("/clients/big.json", padding="x" * 2000)
    await refused(await op.authorize(native(padded)))
    assert "is larger than 1024 bytes" in logged(caplog, padded)

    # found while streaming (no length), without reading the rest
    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for _ in range(1000):
                await response.write(b" " * 512)
                await asyncio.sleep(0.001)
        except (ConnectionResetError, RuntimeError):
            pass
        return response

    streamed = site.serve("/clients/stream.json", endless)
    await refused(await op.authorize(native(streamed)))
    assert "is larger than 1024 bytes" in logged(caplog, streamed)


async def test_a_slow_document_is_refused_within_the_time_limit(
    make_op: MakeOp, site: DocumentSite, caplog: pytest.LogCaptureFixture
) -> None:
    op = await make_op(timeout_seconds=0.5)
    late = site.serve("/clients/late.json", slow(10, document_of(site.url("/clients/late.json"))))

    async def trickle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        try:
            for _ in range(100):
                await response.write(b" ")
                await asyncio.sleep(0.1)
        except (ConnectionResetError, RuntimeError):
            pass
        return response

    trickled = site.serve("/clients/trickle.json", trickle)
    for url in (late, trickled):
        started = time.monotonic()
        await refused(await op.authorize(native(url)))
        # the limit (0.5 s) and slack for a loaded machine, not the 10 s the site would take
        assert time.monotonic() - started < 5
        assert "did not arrive within 0.5 s" in logged(caplog, url)


async def test_a_redirect_is_not_followed(
    make_op: MakeOp, site: DocumentSite, caplog: pytest.LogCaptureFixture
) -> None:
    op = await make_op()
    target = site.document("/clients/tool.json")

    async def moved(_: web.Request) -> web.Response:
        raise web.HTTPFound(target)

    url = site.serve("/clients/moved.json", moved)
    await refused(await op.authorize(native(url)))
    assert "answered a redirect (HTTP 302)" in logged(caplog, url)
    assert site.hits["/clients/moved.json"] == 1 and site.hits["/clients/tool.json"] == 0


async def test_a_flood_of_fresh_urls_is_not_fetched_beyond_the_budget(
    make_op: MakeOp, site: DocumentSite, caplog: pytest.LogCaptureFixture
) -> None:
    op = await make_op(fetches_per_minute=3)
    urls = [site.document(f"/clients/{n}.json") for n in range(6)]
    answers = [await op.authorize(native(url)) for url in urls]
    assert [a.status for a in answers] == [200, 200, 200, 400, 400, 400]
    assert sum(site.hits.values()) == 3
    assert "too many metadata document fetches" in logged(caplog, urls[3])
    # a document fetched already is still answered from the cache
    assert (await op.authorize(native(urls[0]))).status == 200
    assert sum(site.hits.values()) == 3


async def test_a_host_not_allowed_is_not_fetched(
    make_op: MakeOp, site: DocumentSite, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOG)
    op = await make_op(allowed_hosts=["tools.example.net"])
    url = site.document("/clients/tool.json")
    await refused(await op.authorize(native(url)))
    assert "not a host the provider fetches client documents from" in logged(caplog, url)
    assert site.hits["/clients/tool.json"] == 0
