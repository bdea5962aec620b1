"""Every face of the embedded default on one origin, in a real browser.

The default configuration (``scripts/run``) prints the address of its demo at start-up; on that
one origin a person adds a passkey on the account page and signs in to the demo application by
single sign-on, and nothing is asked of another origin (a session cookie set on one host name
is never sent to another, and passkeys need a host name, not an IP address)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import _serve
from tests.browser.support import watched_page
from tests.browser.test_demo_app_in_chromium import app_signs_in
from tests.browser.test_demo_in_chromium import Steps
from tests.browser.test_passkeys_in_chromium import (
    register_with_a_passkey,
    sign_in_with_passkey,
    sign_out,
    virtual_authenticator,
)


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address the start-up line of the default configuration prints for the demo (its
    origin); the service runs meanwhile."""
    workdir = tmp_path_factory.mktemp("authgate-one-origin")
    for _ in _serve(workdir, PYTHONUNBUFFERED="1"):  # the log read while it runs
        deadline = time.monotonic() + 10  # the log's writer may lag the readiness answer
        while True:
            log = (workdir / "serve.log").read_text()
            found = re.search(r"demo page at (https?://[^/\s\"]+)/demo", log)
            if found or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert found, log
        yield found.group(1)


def test_the_printed_address_serves_passkeys_and_single_sign_on(
    browser: Browser, printed: str, artifacts: Path
) -> None:
    # An address where passkeys work: a host name (localhost), never 127.0.0.1.
    assert re.fullmatch(r"http://localhost:\d+", printed), printed
    with watched_page(browser) as (page, watch):
        virtual_authenticator(page)
        steps = Steps(page, printed, artifacts)
        register_with_a_passkey(page, printed, steps)
        expect(page).to_have_url(re.compile("^" + re.escape(printed) + "/demo/"))
        sign_out(page)
        sign_in_with_passkey(page)
        steps.shot("one-origin-passkey")
        # Single sign-on into the demo application: the passkey's session is its sign-in.
        app_signs_in(page, printed, "Ada Lovelace", consent=True)
        steps.shot("one-origin-demo-application")
        # Every request, the development provider's pages included, went to that origin.
        watch.check(printed)
