"""A client described by a metadata document, in headless Chromium against a real ``authgate
serve`` (the default configuration, development): the client's site (a thread of the test, on
another origin) serves its document and receives the answer. The person signs in through the
development provider and sees a consent page that names the host serving the document beside
the name the document gives; Allow brings the site its code; the next request asks again. Any
policy the pages break shows as a console error, which fails the test."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import _serve
from tests.browser.support import watched_page
from tests.browser.test_demo_in_chromium import Steps
from tests.support.ports import free_port

SITE_PORT = free_port()
SITE = f"http://127.0.0.1:{SITE_PORT}"
CLIENT_ID = f"{SITE}/oauth/client.json"
REDIRECT = f"{SITE}/callback"
NETLOC = f"127.0.0.1:{SITE_PORT}"
HEADING = f"Allow Tool Runner ({NETLOC}) to use your account?"


class _Site(BaseHTTPRequestHandler):
    """The client's own site: its document, and the page its answer lands on."""

    fetched: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/oauth/client.json":
            type(self).fetched.append(path)
            body = json.dumps(
                {
                    "client_id": CLIENT_ID,
                    "client_name": "Tool Runner",
                    "redirect_uris": [REDIRECT],
                    "token_endpoint_auth_method": "none",
                }
            ).encode()
            self._answer(body, "application/json")
        elif path == "/callback":
            params = dict(parse_qsl(query))
            text = "code received" if "code" in params else f"error {params.get('error')}"
            self._answer(f"<!doctype html><title>Site</title><h1>{text}</h1>".encode(), "text/html")
        else:
            self.send_error(404)

    def _answer(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", "default-src 'none'")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def site() -> Iterator[type[_Site]]:
    server = ThreadingHTTPServer(("127.0.0.1", SITE_PORT), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield _Site
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, site: type[_Site]) -> Iterator[str]:
    sections = {"client_metadata_documents": {"enabled": True, "allowed_hosts": ["127.0.0.1"]}}
    yield from _serve(tmp_path_factory.mktemp("authgate-metadata-documents"), sections)


def authorize_url(service: str) -> str:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    params = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": REDIRECT,
        "scope": "openid profile",
        "state": secrets.token_urlsafe(16),
        "code_challenge": challenge.rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }
    return f"{service}/oauth2/authorize?{urlencode(params)}"


def test_the_consent_page_names_the_documents_host(
    browser: Browser, service: str, site: type[_Site], artifacts: Path
) -> None:
    with watched_page(browser) as (page, watch):
        steps = Steps(page, service, artifacts)
        page.goto(authorize_url(service))
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        expect(page.get_by_text(f"to continue to Tool Runner ({NETLOC})")).to_be_visible()
        page.get_by_role("link", name="Create an account with Google").click()
        steps.at_provider("Google")
        steps.choose_user("Ada Lovelace")
        expect(page.get_by_role("heading", level=1)).to_have_text(HEADING)
        described = page.locator("p.described")
        expect(described).to_contain_text(f"describes itself from {NETLOC}")
        expect(described).to_be_visible()
        steps.shot("metadata-document-consent")
        page.get_by_role("button", name="Allow").click()
        expect(page).to_have_url(re.compile(rf"^{re.escape(REDIRECT)}\?code="))
        expect(page.get_by_role("heading", level=1)).to_have_text("code received")

        # signed in and consented a moment ago: asked again all the same
        page.goto(authorize_url(service))
        expect(page.get_by_role("heading", level=1)).to_have_text(HEADING)
        page.get_by_role("button", name="Deny").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("error access_denied")
        watch.check(service, elsewhere=[SITE])
    assert site.fetched == ["/oauth/client.json"]  # one fetch, kept for the whole test
