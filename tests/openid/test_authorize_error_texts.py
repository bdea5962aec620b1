"""What a developer reads when the authorization endpoint refuses a request it cannot answer at
a redirect URI: the page and the log line name the client and the redirect_uri received, so
that they can be compared with the registration; whatever was sent is shown escaped."""

from __future__ import annotations

import html
import logging

import pytest

from .harness import WEB_REDIRECT, Op, Request
from .test_authorize_errors import error_page

SCRIPT = "<script>alert(1)</script>"


def page_text(page: str) -> str:
    """The page's text as a person reads it (its markup's escapes undone)."""
    return html.unescape(page)


async def test_an_unregistered_redirect_uri_names_it_and_the_client(
    op: Op, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="authgate.security")
    received = "https://web.example.com/cb/?next=" + SCRIPT
    page = await error_page(await op.authorize(Request(redirect_uri=received)))
    assert SCRIPT not in page  # escaped, never markup
    said = f"the redirect_uri {received!r} is not registered for the client 'web'"
    assert said in page_text(page)
    assert f"authorize: refused: {said}" in caplog.messages


async def test_an_unknown_client_is_named_escaped(op: Op, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="authgate.security")
    client_id = "shop" + SCRIPT
    sent = {**Request().params(), "client_id": client_id}
    response = await op.client.get("/oauth2/authorize", params=sent, allow_redirects=False)
    page = await error_page(response)
    assert SCRIPT not in page
    said = f"the client {client_id!r} is not registered with this service"
    assert said in page_text(page)
    assert f"authorize: refused: {said}" in caplog.messages


async def test_a_control_character_reaches_the_log_escaped(
    op: Op, caplog: pytest.LogCaptureFixture
) -> None:
    """A line break in a value cannot forge a second log line."""
    caplog.set_level(logging.INFO, logger="authgate.security")
    received = WEB_REDIRECT + "\nauthorize: forged"
    await error_page(await op.authorize(Request(redirect_uri=received)))
    [line] = [m for m in caplog.messages if m.startswith("authorize: refused:")]
    assert "\n" not in line
    assert "\\nauthorize: forged" in line
