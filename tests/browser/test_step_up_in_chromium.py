"""The demo page in a real browser: an old session is asked to sign in again before it may
unlink a provider (RFC 9470), and the re-authentication opens account changes again."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.support import IPHONE_UA, watched_page
from tests.browser.test_demo_in_chromium import Steps, page  # noqa: F401 - the page fixture

CONFIRM = "Confirm it's you (re-authentication requested by the application)"


@pytest.fixture
def served(served_short_window: str) -> str:
    return served_short_window


def test_an_old_session_signs_in_again_before_unlinking(
    page: Page,  # noqa: F811
    served: str,
    artifacts: Path,
) -> None:
    steps = Steps(page, served, artifacts)
    notice = page.locator("#notice")
    prompt = page.get_by_role("region", name="Sign in again to continue")
    page.goto(f"{served}/demo")
    page.get_by_role("link", name="Register with Google").click()
    steps.at_provider("Google")
    steps.choose_user("Grace Hopper")
    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Grace Hopper")
    page.get_by_role("link", name="Link Facebook").click()
    steps.at_provider("Facebook")
    steps.choose_user("Grace Hopper")
    expect(notice).to_have_text("Facebook is now linked to your account.")

    time.sleep(4.5)  # the sign-in grows older than the 4-second window
    page.get_by_role("button", name="Unlink Facebook").click()
    # A prompt that leads back to the change, not an error.
    expect(prompt).to_contain_text("needs a recent sign-in")
    expect(prompt).to_be_focused()
    expect(page.locator("#problem")).to_be_hidden()
    assert steps.linked_providers() == ["google", "facebook"]
    steps.shot("step-up-asked")

    page.get_by_role("link", name=re.compile("^Sign in again with Google")).click()
    # The provider's page says that this is a re-authentication, not a first sign-in.
    expect(page.get_by_role("heading", level=1)).to_have_text(CONFIRM)
    steps.shot("step-up-provider-page")
    steps.choose_user("Grace Hopper")
    # The window is the one the API named (max_age=4), not "a few minutes"; and the unlinking
    # asked for is done without a second click.
    expect(notice).to_have_text(
        "You signed in again with Google: account changes are open for 4 seconds. "
        "Facebook was unlinked from your account."
    )
    assert steps.linked_providers() == ["google"]
    # The sessions signed in through Facebook ended with it, and the list shows so.
    sessions = page.locator("#sessions li")
    expect(sessions.first).to_contain_text("This device")
    expect(sessions.filter(has_text="Signed in with Facebook")).to_have_count(0)
    steps.shot("step-up-done")


def test_ending_other_sessions_asks_for_a_re_authentication_and_refuses_another_account(
    browser: Browser, served: str, artifacts: Path
) -> None:
    with (
        watched_page(browser) as (laptop, watch),
        watched_page(browser, user_agent=IPHONE_UA) as (phone, _),
    ):
        steps = Steps(laptop, served, artifacts)
        notice = laptop.locator("#notice")
        prompt = laptop.get_by_role("region", name="Sign in again to continue")
        for page_, link in ((laptop, "Register with Google"), (phone, "Sign in with Google")):
            page_.goto(f"{served}/demo")
            page_.get_by_role("link", name=link).click()
            page_.get_by_role("button", name=re.compile("^Continue as Alan Turing")).click()
            expect(page_.get_by_role("heading", level=1)).to_have_text("Welcome, Alan Turing")
        laptop.reload()
        expect(laptop.locator("#sessions li")).to_have_count(2)

        time.sleep(4.5)  # the sign-in grows older than the 4-second window
        laptop.get_by_role("button", name="Sign out everywhere else").click()
        # The page offers the re-authentication, not a raw error.
        expect(prompt).to_contain_text("signing out everywhere else needs a recent sign-in")
        expect(laptop.locator("#problem")).to_be_hidden()
        expect(laptop.locator("#sessions li")).to_have_count(2)
        steps.shot("step-up-sessions-asked")

        # Re-authenticating as someone else is refused, and the page says what happened.
        laptop.get_by_role("link", name="Sign in again with Google").click()
        expect(laptop.get_by_role("heading", level=1)).to_have_text(CONFIRM)
        steps.choose_user("Ada Lovelace")
        expect(laptop).to_have_url(
            re.compile(
                r"/demo/login\?error=authentication_failed&reason=reauthentication_identity_mismatch$"
            )
        )
        expect(laptop.locator("#problem-text")).to_have_text(
            "You re-authenticated as a different account at Google than the one you are signed "
            "in with, so nothing changed. Sign in again as the account you use here."
        )
        expect(laptop.get_by_role("heading", level=1)).to_have_text("Welcome, Alan Turing")
        expect(laptop.locator("#sessions li")).to_have_count(2)
        steps.shot("step-up-another-account-refused")

        # A provider that did not ask again, as the callback reports it.
        laptop.goto(
            f"{served}/demo/login?error=authentication_failed&reason=stale_provider_authentication"
        )
        expect(laptop.locator("#problem-text")).to_contain_text(
            "Google did not ask you to sign in again"
        )

        # The right account: account changes open, for the API's window, and the sign-out
        # everywhere else asked for is done on the return.
        laptop.get_by_role("button", name="Sign out everywhere else").click()
        laptop.get_by_role("link", name="Sign in again with Google").click()
        expect(laptop.get_by_role("heading", level=1)).to_have_text(CONFIRM)
        steps.choose_user("Alan Turing")
        expect(notice).to_have_text(
            "You signed in again with Google: account changes are open for 4 seconds. "
            "You are signed out everywhere else; this device stays signed in."
        )
        expect(laptop.locator("#sessions li")).to_have_count(1)
        steps.shot("step-up-sessions-done")
        phone.reload()
        expect(phone.locator("#problem-text")).to_contain_text("Your session was ended")
        watch.check(served, {("DELETE", "/v1/account/sessions", 401)})
