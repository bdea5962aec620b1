"""The device verification page (RFC 8628) in a real browser: a command-line tool (the test,
over HTTP) asks for a code; the person opens the page in Chromium, types the code as people do
(lower case, a space for the dash), signs up on authgate's sign-in page through the development
provider, sees the tool's name, the code and the scopes, and presses Allow, or Deny; the tool's
poll then gets its tokens, or ``access_denied``. Any policy a page breaks (its CSP, a form's
``form-action``) shows as a console error, which fails the test."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import _serve
from tests.browser.support import watched_page
from tests.browser.test_demo_in_chromium import Steps

CLIENT_ID = "deploy-cli"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """authgate on the default configuration with a command-line tool registered."""
    tool = {
        CLIENT_ID: {
            "name": "Deploy CLI",
            "type": "public",
            "grant_types": [DEVICE_GRANT, "refresh_token"],
            "allowed_scopes": ["openid", "profile", "offline_access"],
        }
    }
    yield from _serve(tmp_path_factory.mktemp("authgate-device"), {"clients": tool})


def post(url: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """The tool's request: a form posted, the JSON answer and its status."""
    data = urllib.parse.urlencode(form).encode()
    try:
        with urllib.request.urlopen(url, data=data, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def ask(service: str) -> dict[str, Any]:
    status, body = post(
        f"{service}/oauth2/device_authorization",
        {"client_id": CLIENT_ID, "scope": "openid profile"},
    )
    assert status == 200, body
    return body


def poll(service: str, device_code: str) -> tuple[int, dict[str, Any]]:
    return post(
        f"{service}/oauth2/token",
        {"grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": CLIENT_ID},
    )


def to_the_request(page: Page, service: str, user_code: str, first: bool) -> None:
    """The person opens the page, types the code, signs in when asked: the request shown."""
    page.goto(f"{service}/oauth2/device")
    expect(page.get_by_role("heading", level=1)).to_have_text("Connect a device")
    page.get_by_label("Code").fill(user_code.lower().replace("-", " "))
    page.get_by_role("button", name="Continue").click()
    if first:
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        expect(page.get_by_text("to continue to Deploy CLI")).to_be_visible()
        page.get_by_role("link", name="Create an account with Google").click()
        steps = Steps(page, service, Path())
        steps.at_provider("Google")
        steps.choose_user("Ada Lovelace")
    expect(page.get_by_role("heading", level=1)).to_have_text("Connect Deploy CLI?")
    expect(page.get_by_text(user_code, exact=True)).to_be_visible()
    expect(page.get_by_role("listitem")).to_have_text(
        ["Know who you are (your account identifier)", "See your name"]
    )


def test_allow_gives_the_tool_its_tokens_and_deny_access_denied(
    browser: Browser, service: str, artifacts: Path
) -> None:
    with watched_page(browser) as (page, watch):
        steps = Steps(page, service, artifacts)
        asked = ask(service)
        assert poll(service, asked["device_code"])[1]["error"] == "authorization_pending"
        to_the_request(page, service, asked["user_code"], first=True)
        steps.shot("device-request")
        page.get_by_role("button", name="Allow").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Device connected")
        steps.shot("device-connected")
        status, tokens = poll(service, asked["device_code"])
        assert status == 200, tokens
        assert tokens["scope"] == "openid profile" and tokens["id_token"]

        # Signed in now: the next code goes straight to the request; this one is denied.
        second = ask(service)
        to_the_request(page, service, second["user_code"], first=False)
        page.get_by_role("button", name="Deny").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Request denied")
        assert poll(service, second["device_code"]) == (
            400,
            {"error": "access_denied", "error_description": "the person denied the request"},
        )

        # A mistyped code: the form again, saying so (a 400 the watch expects).
        page.goto(f"{service}/oauth2/device?user_code=BBBB-BBBC")
        expect(page.get_by_role("alert")).to_contain_text("That code is not valid")
        assert re.search(r"/oauth2/device\?user_code=", page.url)
        watch.check(service, expected_failures=[("GET", "/oauth2/device", 400)])
