"""The demo's list of sessions in a real browser, on three devices signed in to one account (a
laptop, a phone, a tablet: three browser contexts): the laptop sees all three with itself
marked, ends the phone's session, then signs out everywhere else; each ended device says that
its session was ended instead of acting as if it had never signed in."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.browser.support import ANDROID_UA, IPHONE_UA, watched_page
from tests.browser.test_demo_in_chromium import Steps

ENDED = "Your session was ended — signed out elsewhere or revoked. Sign in again."
# The probe of a device whose session was ended: the one failure it may see.
ENDED_PROBE = {("GET", "/v1/account", 401)}


def sign_in(page: Page, served: str, link: str, user: str) -> None:
    page.goto(f"{served}/demo")
    page.get_by_role("link", name=link).click()
    expect(page).to_have_url(re.compile(r"/dev/idp/authorize\?"))
    page.get_by_role("button", name=re.compile(f"^Continue as {user}")).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Welcome, {user}")


def devices(page: Page) -> list[tuple[str, bool, bool]]:
    """The sessions listed: (device line, marked current, has an End button)."""
    items = page.locator("#sessions li")
    return [
        (
            items.nth(i).locator(".device strong").inner_text(),
            items.nth(i).locator(".tag.current").count() == 1,
            items.nth(i).get_by_role("button", name=re.compile("^End the session")).count() == 1,
        )
        for i in range(items.count())
    ]


def expect_ended(page: Page, steps: Steps, name: str) -> None:
    """The device's next load says its session was ended, in the message box, not in a green
    notice, and offers the sign-in buttons. A sign-out is no error: the box is neutral, a
    status, not an alert."""
    page.reload()
    expect(page.locator("#problem")).to_be_visible()
    expect(page.locator("#problem")).to_have_attribute("role", "status")
    expect(page.locator("#problem")).to_have_class("message neutral")
    expect(page.locator("#problem-heading")).to_have_text("You are signed out")
    expect(page.locator("#problem-text")).to_have_text(ENDED)
    expect(page.locator("#notice")).to_be_hidden()
    expect(page.get_by_role("link", name="Sign in with Google")).to_be_visible()
    expect(page.locator("#signed-in")).to_be_hidden()
    steps.shot(name)
    # Said once: the next load is a plain signed-out page.
    page.reload()
    expect(page.get_by_role("link", name="Sign in with Google")).to_be_visible()
    expect(page.locator("#problem")).to_be_hidden()


def test_the_session_list_ends_one_and_every_other_and_an_ended_device_says_so(
    browser: Browser, served: str, artifacts: Path
) -> None:
    with (
        watched_page(browser) as (laptop, laptop_watch),
        watched_page(browser, user_agent=IPHONE_UA) as (phone, phone_watch),
        watched_page(browser, user_agent=ANDROID_UA) as (tablet, tablet_watch),
    ):
        steps = Steps(laptop, served, artifacts)
        sign_in(laptop, served, "Register with Google", "Ada Lovelace")
        expect(laptop.locator("#sessions li")).to_have_count(1)
        assert devices(laptop) == [("Headless Chrome on Linux", True, False)]
        expect(laptop.get_by_role("button", name="Sign out everywhere else")).to_be_hidden()

        sign_in(phone, served, "Sign in with Google", "Ada Lovelace")
        sign_in(tablet, served, "Sign in with Google", "Ada Lovelace")
        laptop.reload()
        expect(laptop.locator("#sessions li")).to_have_count(3)
        # This device first and marked (no End button: "Sign out" ends it), then the newest.
        assert devices(laptop) == [
            ("Headless Chrome on Linux", True, False),
            ("Chrome on Android", False, True),
            ("Safari on iOS", False, True),
        ]
        expect(laptop.locator("#sessions li").first).to_contain_text("This device")
        expect(laptop.get_by_role("button", name="Sign out everywhere else")).to_be_visible()
        steps.shot("sessions-three-devices")

        # End one: the phone's.
        laptop.get_by_role("button", name="End the session of Safari on iOS").click()
        expect(laptop.locator("#notice")).to_have_text("The session of Safari on iOS was ended.")
        expect(laptop.locator("#sessions li")).to_have_count(2)
        assert [d for d, _, _ in devices(laptop)] == [
            "Headless Chrome on Linux",
            "Chrome on Android",
        ]
        steps.shot("sessions-ended-the-phone")
        expect_ended(phone, Steps(phone, served, artifacts), "sessions-phone-was-ended")

        # Sign out everywhere else: only this device stays.
        laptop.get_by_role("button", name="Sign out everywhere else").click()
        expect(laptop.locator("#notice")).to_have_text(
            "You are signed out everywhere else; this device stays signed in."
        )
        expect(laptop.locator("#sessions li")).to_have_count(1)
        expect(laptop.get_by_role("button", name="Sign out everywhere else")).to_be_hidden()
        steps.shot("sessions-signed-out-everywhere-else")
        expect_ended(tablet, Steps(tablet, served, artifacts), "sessions-tablet-was-ended")

        laptop.reload()
        expect(laptop.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
        laptop_watch.check(served)
        phone_watch.check(served, ENDED_PROBE)
        tablet_watch.check(served, ENDED_PROBE)
