"""The demo's second application (``/demo/app``, the client ``demo-app`` of the default
configuration) in a real browser: an OpenID Connect relying party signing in through authgate.

Single sign-on with the account page both ways: signed in on the account page, the application
signs in without the identity provider; signing out in the application (RP-initiated logout)
signs the account page out, and signing out on the account page ends the application's sign-in
as the application sees it (its userinfo call is refused). And a first sign-in that starts at
the application: authgate's sign-in page, the provider, the consent page, back to the
application; the account page lists the application and withdraws it.
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.browser.support import Watch, watched_page
from tests.browser.test_demo_in_chromium import Steps
from tests.browser.test_demo_sessions_in_chromium import sign_in

SIGNED_OUT_APP = "You are not signed in to this application"
# The account page that remembers a sign-in asks for the account once and learns it ended;
# the application asks userinfo once and learns its sign-in ended.
ACCOUNT_ENDED = ("GET", "/v1/account", 401)
APP_ENDED = ("GET", "/oauth2/userinfo", 401)


def app_signs_in(page: Page, served: str, user: str, *, consent: bool) -> None:
    """Open the application and sign in through authgate, which knows the browser."""
    page.goto(f"{served}/demo/app")
    expect(page.get_by_role("heading", name=SIGNED_OUT_APP)).to_be_visible()
    page.get_by_role("button", name="Sign in with authgate").click()
    if consent:
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "Allow Demo application to use your account?"
        )
        page.get_by_role("button", name="Allow").click()
    expect_app_signed_in(page, user)


def expect_app_signed_in(page: Page, user: str) -> None:
    expect(page).to_have_url(re.compile(r"/demo/app$"))
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Demo application: hello, {user}")
    expect(page.locator("#notice")).to_have_text("You are signed in through authgate.")
    expect(page.locator("#id-token-claims")).to_contain_text('"aud": "demo-app"')
    expect(page.locator("#userinfo")).to_contain_text(f'"name": "{user}"')


def provider_asked(watch: Watch, since: int) -> list[str]:
    return [u for u in watch.requested[since:] if "/dev/idp/" in u]


def test_single_sign_on_with_the_account_page_and_logout_from_either_side(
    browser: Browser, served: str, artifacts: Path
) -> None:
    with watched_page(browser) as (page, watch):
        steps = Steps(page, served, artifacts)
        sign_in(page, served, "Register with Google", "Ada Lovelace")
        expect(page.locator("#apps-none")).to_have_text("No application yet.")

        # Signed in on the account page: the application signs in without the provider (only
        # the consent page of a first use in between).
        before = len(watch.requested)
        app_signs_in(page, served, "Ada Lovelace", consent=True)
        assert provider_asked(watch, before) == []
        expect(page.locator("#app-email")).to_have_text("ada@example.test")
        steps.shot("app-single-sign-on")

        # The account page lists it.
        page.goto(f"{served}/demo")
        expect(page.locator("#apps li")).to_have_count(1)
        expect(page.locator("#apps li")).to_contain_text("Demo application")
        expect(page.locator("#apps li")).to_contain_text("May use: email, openid, profile")
        steps.shot("account-lists-the-app")

        # Sign out in the application (RP-initiated logout): back to it, signed out...
        page.goto(f"{served}/demo/app")
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "Demo application: hello, Ada Lovelace"
        )
        page.get_by_role("button", name="Sign out").click()
        expect(page).to_have_url(re.compile(r"/demo/app$"))
        expect(page.locator("#notice")).to_have_text(
            "You are signed out of the application and of authgate."
        )
        expect(page.get_by_role("heading", name=SIGNED_OUT_APP)).to_be_visible()
        steps.shot("app-signed-out")
        # ...and the account page too.
        page.goto(f"{served}/demo")
        expect(page.locator("#problem-heading")).to_have_text("You are signed out")
        # The sign-out the person chose is no error: a neutral status, not a red alert.
        expect(page.locator("#problem")).to_have_attribute("role", "status")
        expect(page.locator("#problem")).to_have_class("message neutral")
        expect(page.get_by_role("link", name="Sign in with Google")).to_be_visible()
        expect(page.locator("#signed-in")).to_be_hidden()

        # The other way: signed in again, the application signs in at once (consent given).
        page.get_by_role("link", name="Sign in with Google").click()
        steps.at_provider("Google")
        steps.choose_user("Ada Lovelace")
        expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
        before = len(watch.requested)
        app_signs_in(page, served, "Ada Lovelace", consent=False)
        assert provider_asked(watch, before) == []
        assert [u for u in watch.requested[before:] if "/oauth2/consent" in u] == []

        # Sign out on the account page: the application sees that its sign-in ended.
        page.goto(f"{served}/demo")
        page.get_by_role("button", name="Sign out", exact=True).click()
        expect(page.locator("#notice")).to_have_text("You are signed out.")
        page.goto(f"{served}/demo/app")
        expect(page.locator("#problem-heading")).to_have_text("You are signed out")
        expect(page.locator("#problem-text")).to_contain_text("Your sign-in ended")
        expect(page.get_by_role("heading", name=SIGNED_OUT_APP)).to_be_visible()
        steps.shot("app-sees-the-account-sign-out")
        watch.check(served, {ACCOUNT_ENDED, APP_ENDED})


def test_a_first_sign_in_from_the_app_then_withdrawn_on_the_account_page(
    browser: Browser, served: str, artifacts: Path
) -> None:
    with watched_page(browser) as (page, watch):
        steps = Steps(page, served, artifacts)
        page.goto(f"{served}/demo/app")
        page.get_by_role("button", name="Sign in with authgate").click()
        # No authgate session: its sign-in page, a provider, then consent.
        expect(page).to_have_url(re.compile(r"/oauth2/authorize\?"))
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        expect(page.get_by_text("to continue to Demo application")).to_be_visible()
        steps.shot("app-authgate-sign-in-page")
        page.get_by_role("link", name="Create an account with Google").click()
        steps.at_provider("Google")
        steps.choose_user("Grace Hopper")
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "Allow Demo application to use your account?"
        )
        steps.shot("app-consent")
        page.get_by_role("button", name="Allow").click()
        expect_app_signed_in(page, "Grace Hopper")

        # The same authgate session serves the account page (the application links to its
        # dashboard, which asks for the account): signed in there, the app listed.
        page.get_by_role("link", name="Your authgate account").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Grace Hopper")
        expect(page.locator("#apps li")).to_have_count(1)

        # Withdrawn: the application's tokens die at once.
        page.get_by_role("button", name="Withdraw Demo application").click()
        expect(page.locator("#notice")).to_have_text(
            "Demo application no longer has access to your account."
        )
        expect(page.locator("#apps li")).to_have_count(0)
        expect(page.locator("#apps-none")).to_be_visible()
        steps.shot("account-withdrew-the-app")
        page.goto(f"{served}/demo/app")
        expect(page.locator("#problem-heading")).to_have_text("You are signed out")
        expect(page.get_by_role("heading", name=SIGNED_OUT_APP)).to_be_visible()
        watch.check(served, {APP_ENDED})
