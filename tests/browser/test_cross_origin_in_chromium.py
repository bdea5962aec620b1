"""The demo as the application on its own origin, in a real browser: its pages come from a
second origin (another port of 127.0.0.1) and call the service on its origin with the session
cookie (CORS with credentials, app.allowed_origins). Sign in, read the account, unlink, sign
out; and the same page on a third origin is refused by the browser.

Two ports of one host are two origins of one site: the SameSite=Lax session cookie is sent
with the cross-origin fetches, as it is between app.example.com and api.example.com.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response, expect, sync_playwright

from authgate.entrypoints.demo.assets import read_static, stylesheet
from tests.browser.conftest import CHROMIUM_ARGS, _serve
from tests.browser.test_demo_in_chromium import Steps
from tests.support.ports import free_ports

APP_PORT, THIRD_PORT = free_ports(2)
APP = f"http://127.0.0.1:{APP_PORT}"
THIRD = f"http://127.0.0.1:{THIRD_PORT}"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class _Site:
    """The demo's static files on an origin of their own, with ``apiBase`` naming the
    service: what an application deployed apart from the service looks like."""

    def __init__(self, port: int, api: str) -> None:
        with urllib.request.urlopen(f"{api}/demo/config.json", timeout=5) as answer:
            settings = json.load(answer)
        settings["apiBase"] = api
        files: dict[str, tuple[str, bytes]] = {
            "/demo/config.json": ("application/json", json.dumps(settings).encode()),
            "/demo/assets/demo.js": ("text/javascript", read_static("demo.js")),
            "/demo/assets/demo.css": ("text/css", stylesheet()),
            "/demo/assets/favicon.svg": ("image/svg+xml", read_static("favicon.svg")),
        }
        page = ("text/html; charset=utf-8", read_static("demo.html"))
        for path in ("/demo", "/demo/", "/demo/login", "/demo/onboarding", "/demo/dashboard"):
            files[path] = page
        # The application's own policy: scripts from itself, fetches to itself and the API.
        csp = f"default-src 'self'; connect-src 'self' {api}; frame-ancestors 'none'"

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                found = files.get(urlsplit(self.path).path)
                if found is None:
                    self.send_error(404)
                    return
                content_type, body = found
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Content-Security-Policy", csp)
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service with the application at APP (app.url, app.allowed_origins), both on
    127.0.0.1: one site."""
    app = {"url": f"{APP}/demo", "allowed_origins": [APP]}
    workdir = tmp_path_factory.mktemp("authgate-cross-origin")
    yield from _serve(workdir, {"app": app}, PUBLIC_HOST="127.0.0.1")


@pytest.fixture(scope="module")
def sites(service: str) -> Iterator[None]:
    app, third = _Site(APP_PORT, service), _Site(THIRD_PORT, service)
    try:
        yield
    finally:
        app.close()
        third.close()


@pytest.fixture
def browser(chromium_path: Path, sites: None) -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Watch:
    """What a page did: the answers that failed, and its script errors."""

    def __init__(self, page: Page) -> None:
        self.failed: list[tuple[str, str, int]] = []
        self.errors: list[str] = []
        page.on("response", self.answered)
        page.on("console", self.console)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def answered(self, response: Response) -> None:
        path = urlsplit(response.url).path
        if response.status >= 400 and path != "/favicon.ico":
            self.failed.append((response.request.method, path, response.status))

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.errors.append(message.text)


def test_the_application_on_another_origin_signs_in_reads_unlinks_and_signs_out(
    browser: Browser, service: str, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    watch = Watch(page)
    steps = Steps(page, service, artifacts)
    notice = page.locator("#notice")
    api_calls: list[tuple[str, str, str | None]] = []
    page.on(
        "request",
        lambda r: (
            api_calls.append((r.method, r.url, _origin(r.frame.url)))
            if r.url.startswith(f"{service}/v1/account")
            or r.url.startswith(f"{service}/v1/auth/lo")
            else None
        ),
    )

    page.goto(f"{APP}/demo")
    expect(page.get_by_role("heading", name="Sign in to your account")).to_be_visible()
    # Its sign-in links go to the service.
    register = page.get_by_role("link", name="Register with Google")
    assert (register.get_attribute("href") or "").startswith(f"{service}/v1/auth/google?")
    steps.shot("cross-origin-signed-out")

    # Register with google, link facebook: the callbacks come back to the application's origin.
    register.click()
    steps.at_provider("Google")
    steps.choose_user("Ada Lovelace")
    expect(page).to_have_url(f"{APP}/demo/onboarding")
    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
    expect(page.locator("#account-email")).to_have_text("ada@example.test")
    page.get_by_role("link", name="Link Facebook").click()
    steps.at_provider("Facebook")
    steps.choose_user("Ada Lovelace")
    expect(notice).to_have_text("Facebook is now linked to your account.")
    assert page.url.startswith(f"{APP}/demo/dashboard")
    assert steps.linked_providers() == ["google", "facebook"]
    steps.shot("cross-origin-signed-in")

    # Unlink (a DELETE: preflighted) with the cookie, from the application's origin.
    page.get_by_role("button", name="Unlink Facebook").click()
    expect(notice).to_have_text("Facebook was unlinked from your account.")
    assert steps.linked_providers() == ["google"]
    steps.shot("cross-origin-unlinked")

    # A page on a third origin, in the same browser (the cookie is there): refused.
    third = context.new_page()
    third.set_default_timeout(10_000)
    third_watch = Watch(third)
    third.goto(f"{THIRD}/demo")
    # It has never seen a sign-in, so it shows the signed-out page; what it may try is below.
    expect(third.get_by_role("link", name="Sign in with Google")).to_be_visible()
    expect(third.locator("#signed-in")).to_be_hidden()
    outcome = third.evaluate(
        """async (api) => {
            const tries = [
                ["GET", "/v1/account"],
                ["DELETE", "/v1/account/providers/google"],
                ["POST", "/v1/auth/logout"],
            ];
            const results = [];
            for (const [method, path] of tries) {
                try {
                    const r = await fetch(api + path, { method, credentials: "include" });
                    results.push(`${method} ${r.status}`);
                } catch (e) {
                    results.push(`${method} refused`);
                }
            }
            return results;
        }""",
        service,
    )
    # The read and the logout carry the cookie from a third origin: refused (403, without CORS
    # headers, so the browser keeps even that from the page); the DELETE's preflight is
    # refused, so it is never sent.
    assert outcome == ["GET refused", "DELETE refused", "POST refused"], outcome
    # The browser says why (its console), for each of the three.
    blocked = [e for e in third_watch.errors if "blocked by CORS policy" in e]
    assert len(blocked) >= 3, third_watch.errors
    third.screenshot(path=str(artifacts / "cross-origin-third-refused.png"), full_page=True)
    third.close()

    # Still signed in, still linked: nothing the third origin tried happened.
    page.reload()
    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
    assert steps.linked_providers() == ["google"]

    # Sign out, from the application's origin; the cookie is gone, not just the view.
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(notice).to_have_text("You are signed out.")
    page.reload()
    expect(page.get_by_role("link", name="Sign in with Google")).to_be_visible()
    assert page.request.get(f"{service}/v1/account").status == 401
    steps.shot("cross-origin-signed-out-again")

    # Every API call was cross-origin, from a page of the application's origin.
    assert api_calls and {o for _, _, o in api_calls} == {APP}, api_calls
    assert {(m, re.sub(r"\?.*", "", u)) for m, u, _ in api_calls} >= {
        ("GET", f"{service}/v1/account"),
        ("DELETE", f"{service}/v1/account/providers/facebook"),
        ("POST", f"{service}/v1/auth/logout"),
    }
    # A page that knows it is signed out does not ask for the account: nothing failed.
    assert watch.failed == [], watch.failed
    assert watch.errors == []
    context.close()
