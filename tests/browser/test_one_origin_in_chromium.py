"""Every face of the embedded default on one origin, with one look, in a real browser.

The default configuration (``scripts/run``) prints the address of its demo at start-up; on that
one origin a person adds a passkey on the account page and signs in to the demo application by
single sign-on, and nothing is asked of another origin (a session cookie set on one host name
is never sent to another, and passkeys need a host name, not an IP address). Every page a
person sees, the provider's (sign-in, consent, logout confirmation, error) and the demo's,
shares the demo's header and buttons, at 1280 px and at 375 px; the screenshots are in
``test-artifacts/browser/look-*.png``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

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

# The demo's button colour (light scheme): the provider's pages wear the same.
ACCENT = "rgb(26, 77, 143)"
# The provider's error page answers 400.
REFUSED = ("GET", "/oauth2/authorize", 400)

# How wide the field's placeholder is, in the field's font, and how wide its text box is.
PLACEHOLDER_ROOM = """(field) => {
    const style = getComputedStyle(field);
    const context = document.createElement("canvas").getContext("2d");
    context.font = style.font;
    const room = field.clientWidth - parseFloat(style.paddingLeft)
        - parseFloat(style.paddingRight);
    return [context.measureText(field.placeholder).width, room];
}"""


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


def looks_like_the_demo(page: Page, width: int) -> None:
    """The demo's header (its brand) and its buttons; nothing scrolls the page sideways."""
    expect(page.locator("header .brand")).to_have_text(re.compile("^authgate"))
    button = page.locator("main .button, main button").first
    expect(button).to_have_css("background-color", ACCENT)
    expect(button).to_have_css("border-radius", "6.4px")
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def placeholder_fits(page: Page, selector: str) -> None:
    shown, room = page.locator(selector).evaluate(PLACEHOLDER_ROOM)
    assert shown <= room, f"{selector}: the placeholder needs {shown}px, the field has {room}px"


@pytest.mark.parametrize(("width", "user"), [(1280, "Grace Hopper"), (375, "Alan Turing")])
def test_every_page_a_person_sees_has_the_demo_s_look(
    browser: Browser, printed: str, artifacts: Path, width: int, user: str
) -> None:
    with watched_page(browser, viewport={"width": width, "height": 900}) as (page, watch):
        steps = Steps(page, printed, artifacts)

        def shot(name: str) -> None:
            page.screenshot(path=str(artifacts / f"look-{name}-{width}.png"), full_page=True)

        # The provider's error page.
        page.goto(f"{printed}/oauth2/authorize?client_id=nobody&response_type=code")
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "This sign-in request cannot be completed"
        )
        expect(page.locator("header .brand")).to_have_text("authgate")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot("error")

        # The demo's signed-out page, its passkey field whole.
        page.goto(f"{printed}/demo")
        expect(page.get_by_role("button", name="Sign in with a passkey")).to_be_visible()
        placeholder_fits(page, "#passkey-username")
        looks_like_the_demo(page, width)
        shot("demo-signed-out")

        # The provider's sign-in page, from the demo application.
        page.goto(f"{printed}/demo/app")
        page.get_by_role("button", name="Sign in with authgate").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        looks_like_the_demo(page, width)
        placeholder_fits(page, "#passkey-field")
        shot("sign-in")

        # The consent page.
        page.get_by_role("link", name="Create an account with Google").click()
        steps.choose_user(user)
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "Allow Demo application to use your account?"
        )
        looks_like_the_demo(page, width)
        shot("consent")
        page.get_by_role("button", name="Allow").click()
        expect(page.get_by_role("heading", level=1)).to_have_text(
            f"Demo application: hello, {user}"
        )

        # The demo's account page (its dashboard asks: this tab signed in elsewhere); what
        # Google calls the person, not the API's identifier.
        page.goto(f"{printed}/demo/dashboard")
        expect(page.get_by_role("heading", level=1)).to_have_text(f"Welcome, {user}")
        identity = page.locator("#linked-providers tr td").first
        expect(identity).to_contain_text(user)
        expect(identity).not_to_contain_text("user:")
        looks_like_the_demo(page, width)
        shot("account")

        # The logout confirmation (asked: no ID token names the application), then signed out.
        page.goto(f"{printed}/oauth2/logout")
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign out of authgate?")
        looks_like_the_demo(page, width)
        shot("logout-confirmation")
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("You are signed out")
        expect(page.locator("header .brand")).to_have_text("authgate")
        shot("signed-out")
        watch.check(printed, {REFUSED})


def test_focus_rings_sit_on_controls_not_on_notices(
    browser: Browser, printed: str, artifacts: Path
) -> None:
    with watched_page(browser) as (page, _):
        page.goto(f"{printed}/demo")
        page.get_by_role("link", name="Register with Facebook").click()
        Steps(page, printed, artifacts).choose_user("Ada Lovelace")
        expect(page.get_by_role("heading", level=1)).to_have_text(re.compile("^Welcome"))
        page.get_by_role("button", name="Sign out", exact=True).click()
        notice = page.locator("#notice")
        expect(notice).to_have_text("You are signed out.")
        # The notice has the focus (a screen reader reads it), without a ring.
        expect(notice).to_be_focused()
        expect(notice).to_have_css("outline-style", "none")
        # A control reached by the keyboard shows one.
        page.keyboard.press("Tab")
        focused = page.locator(":focus")
        expect(focused).to_have_css("outline-style", "solid")
