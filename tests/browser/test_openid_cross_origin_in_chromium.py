"""authgate as the OpenID Provider of an application on another origin, in a real browser.

The application (``relying_party.RelyingParty``: a confidential client on its own origin, a
thread of the test) starts each flow; the person clicks every page of the provider: the sign-in
page, the upstream provider (the development provider at ``/dev/idp``), the consent page's
Allow and Deny, the form that posts the answer (``response_mode=form_post``), a fresh login
asked with ``prompt=login`` and ``max_age``, the logout confirmation, and the sign-in page's
passkey. What the test asserts is what the application shows.

The application is on ``localhost`` and authgate on ``127.0.0.1`` (``PUBLIC_HOST``; the passkey
test the other way round, authgate on its default ``localhost``: passkeys need a domain):
another origin, as every real application is.
That is what a same-origin test cannot see: browsers hold the redirect that answers a form
post to the page's ``form-action``, so a consent page that allowed only itself recorded the
click and the browser never reached the application. Any policy a page breaks shows as a
console error, which fails the test.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import _serve
from tests.browser.relying_party import RelyingParty
from tests.browser.support import Watch, watched_page
from tests.browser.test_demo_in_chromium import Steps
from tests.browser.test_passkeys_in_chromium import (
    register_with_a_passkey,
    sign_out,
    virtual_authenticator,
)
from tests.support.ports import free_ports

APP_PORT, PASSKEY_APP_PORT = free_ports(2)
CLIENT_ID = "shop"
CLIENT_SECRET = "shop-secret-for-the-browser-tests-only-0123456789"
CONSENT = "Allow Example Shop to use your account?"
SIGNED_IN = re.compile(r"^Signed in as \S+$")
# The development provider's page when authgate asks it for a new login (prompt=login).
PROVIDER_ASKS_AGAIN = "Confirm it's you (re-authentication requested by the application)"


def _client(origin: str) -> dict[str, Any]:
    """The application's registration: confidential, not first-party (so consent is asked)."""
    return {
        CLIENT_ID: {
            "name": "Example Shop",
            "type": "confidential",
            "secrets": [CLIENT_SECRET],
            "redirect_uris": [f"{origin}/callback"],
            "post_logout_redirect_uris": [f"{origin}/signed-out"],
            "allowed_scopes": ["openid", "profile", "email"],
        }
    }


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """authgate at 127.0.0.1, the application registered at localhost."""
    sections = {"clients": _client(f"http://localhost:{APP_PORT}")}
    workdir = tmp_path_factory.mktemp("authgate-openid-cross-origin")
    yield from _serve(workdir, sections, PUBLIC_HOST="127.0.0.1")


@pytest.fixture(scope="module")
def running_shop(service: str) -> Iterator[RelyingParty]:
    shop = RelyingParty(
        host="localhost",
        port=APP_PORT,
        issuer=service,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
    )
    try:
        yield shop
    finally:
        shop.close()


@pytest.fixture
def shop(running_shop: RelyingParty) -> Iterator[RelyingParty]:
    """The application; afterwards: nothing went wrong on its side."""
    running_shop.problems.clear()
    running_shop.answers.clear()
    yield running_shop
    assert running_shop.problems == []


def at_sign_in_page(page: Page, service: str) -> None:
    expect(page).to_have_url(re.compile(rf"^{re.escape(service)}/oauth2/authorize\?"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")


def at_consent_page(page: Page, service: str) -> None:
    expect(page).to_have_url(re.compile(rf"^{re.escape(service)}/oauth2/authorize\?"))
    expect(page.get_by_role("heading", level=1)).to_have_text(CONSENT)


def signed_in(page: Page, shop: RelyingParty, name: str) -> tuple[str, int | None]:
    """The application's page says who signed in: their subject and the ID token's
    ``auth_time`` (None without one: a provider that proved no login time)."""
    expect(page).to_have_url(f"{shop.origin}/")
    heading = page.get_by_role("heading", level=1)
    expect(heading).to_have_text(SIGNED_IN)
    expect(page.locator("#name")).to_have_text(name)
    subject = heading.inner_text().removeprefix("Signed in as ")
    auth_time = page.locator("#auth-time").inner_text()
    return subject, None if auth_time == "None" else int(auth_time)


def registers_through_the_shop(
    page: Page, service: str, shop: RelyingParty, user: str, provider: str = "Google"
) -> str:
    """A person new to authgate starts at the application: authgate's sign-in page, an
    account created with ``provider``, consent allowed; the application's subject."""
    steps = Steps(page, service, Path())
    page.goto(f"{shop.origin}/")
    page.get_by_role("link", name="Sign in", exact=True).click()
    at_sign_in_page(page, service)
    expect(page.get_by_text("to continue to Example Shop")).to_be_visible()
    page.get_by_role("link", name=f"Create an account with {provider}").click()
    steps.at_provider(provider)
    steps.choose_user(user)
    at_consent_page(page, service)
    page.get_by_role("button", name="Allow").click()
    subject, _ = signed_in(page, shop, user)
    return subject


def check(watch: Watch, service: str, shop: RelyingParty, *others: str) -> None:
    """Only authgate and the application were asked, no answer failed, and the console
    holds no error or warning (a page's refused policy is one)."""
    watch.check(service, elsewhere=[shop.origin, *others])


def test_allow_brings_the_application_its_code_and_logout_with_its_id_token(
    browser: Browser, service: str, shop: RelyingParty, artifacts: Path
) -> None:
    with watched_page(browser) as (page, watch):
        steps = Steps(page, service, artifacts)
        page.goto(f"{shop.origin}/")
        expect(page.get_by_role("heading", level=1)).to_have_text("Example Shop: not signed in")
        page.get_by_role("link", name="Sign in", exact=True).click()
        at_sign_in_page(page, service)
        expect(page.get_by_text("to continue to Example Shop")).to_be_visible()
        steps.shot("openid-cross-origin-sign-in-page")
        page.get_by_role("link", name="Create an account with Google").click()
        steps.at_provider("Google")
        steps.choose_user("Ada Lovelace")
        at_consent_page(page, service)
        expect(page.get_by_role("listitem")).to_have_text(
            ["Know who you are (your account identifier)", "See your name"]
        )
        steps.shot("openid-cross-origin-consent")

        # Allow: the answer's redirect leaves authgate's origin for the application's.
        page.get_by_role("button", name="Allow").click()
        subject, _ = signed_in(page, shop, "Ada Lovelace")
        assert shop.answers == [("GET", "code")]
        steps.shot("openid-cross-origin-allowed")

        # RP-initiated logout with the ID token of this very session: no question asked,
        # straight back to the application's registered address.
        page.get_by_role("link", name="Sign out", exact=True).click()
        expect(page).to_have_url(re.compile(rf"^{re.escape(shop.origin)}/signed-out\?"))
        expect(page.get_by_role("heading", level=1)).to_have_text("Signed out")

        # authgate's session ended with it: the next sign-in asks again, consent does not.
        page.goto(f"{shop.origin}/")
        page.get_by_role("link", name="Sign in", exact=True).click()
        at_sign_in_page(page, service)
        page.get_by_role("link", name="Sign in with Google").click()
        steps.at_provider("Google")
        steps.choose_user("Ada Lovelace")
        assert signed_in(page, shop, "Ada Lovelace")[0] == subject
        check(watch, service, shop)


def test_deny_tells_the_application_access_denied_and_form_post_answers_by_post(
    browser: Browser, service: str, shop: RelyingParty, artifacts: Path
) -> None:
    with watched_page(browser) as (page, watch):
        steps = Steps(page, service, artifacts)
        page.goto(f"{shop.origin}/")
        page.get_by_role("link", name="Sign in", exact=True).click()
        at_sign_in_page(page, service)
        page.get_by_role("link", name="Create an account with Google").click()
        steps.at_provider("Google")
        steps.choose_user("Grace Hopper")
        at_consent_page(page, service)

        # Deny: the application hears access_denied at its redirect URI.
        page.get_by_role("button", name="Deny").click()
        expect(page).to_have_url(re.compile(rf"^{re.escape(shop.origin)}/callback\?"))
        expect(page.get_by_role("heading", level=1)).to_have_text("The sign-in did not happen")
        expect(page.locator("#error")).to_have_text("access_denied")
        assert shop.answers == [("GET", "access_denied")]
        steps.shot("openid-cross-origin-denied")

        # The answer posted (form_post): signed in to authgate already, asked again (the
        # refusal granted nothing), allowed; authgate's page posts the code to the application.
        page.get_by_role("link", name="Back to the shop").click()
        page.get_by_role("link", name="Sign in, answer posted").click()
        at_consent_page(page, service)
        page.get_by_role("button", name="Allow").click()
        signed_in(page, shop, "Grace Hopper")
        assert shop.answers == [("GET", "access_denied"), ("POST", "code")]
        steps.shot("openid-cross-origin-form-post")

        # Denied with the answer posted too.
        page.goto(f"{shop.origin}/start?response_mode=form_post&prompt=consent")
        at_consent_page(page, service)
        page.get_by_role("button", name="Deny").click()
        expect(page).to_have_url(f"{shop.origin}/callback")
        expect(page.locator("#error")).to_have_text("access_denied")
        assert shop.answers[-1] == ("POST", "access_denied")
        check(watch, service, shop)


def test_prompt_login_and_max_age_send_the_person_to_the_provider_again(
    browser: Browser, service: str, shop: RelyingParty, artifacts: Path
) -> None:
    """The ID token's ``auth_time`` is when the person logged in at the provider (the
    development provider signs it: the moment its Continue button was clicked), never the
    moment of the application's request nor of authgate's callback."""
    with watched_page(browser) as (page, watch):
        steps = Steps(page, service, artifacts)
        before = int(time.time())
        subject = registers_through_the_shop(page, service, shop, "Alan Turing")
        first = signed_in(page, shop, "Alan Turing")[1]
        assert first is not None and before <= first <= time.time()

        # prompt=login: authgate's session does not do; its sign-in page says why, and the
        # provider is asked for a new login.
        page.get_by_role("link", name="Sign in again").click()
        at_sign_in_page(page, service)
        expect(page.get_by_text("Example Shop asks you to sign in again.")).to_be_visible()
        page.get_by_role("link", name="Sign in with Google").click()
        expect(page.get_by_role("heading", level=1)).to_have_text(PROVIDER_ASKS_AGAIN)
        steps.shot("openid-cross-origin-prompt-login")
        # The person takes a moment: the request's time and the login's differ.
        page.wait_for_timeout(1500)
        clicked = time.time()
        steps.choose_user("Alan Turing")
        again, second = signed_in(page, shop, "Alan Turing")
        assert again == subject
        assert second is not None and int(clicked) <= second <= time.time(), (clicked, second)
        assert second > first

        # max_age that the last login meets: single sign-on, the same auth_time, no page.
        asked = len(watch.requested)
        page.get_by_role("link", name="Sign in, within the last 10 minutes").click()
        assert signed_in(page, shop, "Alan Turing") == (subject, second)
        went = [u for u in watch.requested[asked:] if not u.startswith(shop.origin)]
        assert [re.sub(r"\?.*", "", u) for u in went] == [f"{service}/oauth2/authorize"]

        # max_age that it no longer meets: the provider again, and a new auth_time.
        page.wait_for_timeout(max(0, int((second + 3 - time.time()) * 1000)))
        page.get_by_role("link", name="Sign in, within the last 2 seconds").click()
        at_sign_in_page(page, service)
        expect(page.get_by_text("Example Shop asks you to sign in again.")).to_be_visible()
        page.get_by_role("link", name="Sign in with Google").click()
        expect(page.get_by_role("heading", level=1)).to_have_text(PROVIDER_ASKS_AGAIN)
        page.wait_for_timeout(1500)
        clicked = time.time()
        steps.choose_user("Alan Turing")
        third = signed_in(page, shop, "Alan Turing")[1]
        assert third is not None and int(clicked) <= third <= time.time(), (clicked, third)
        assert shop.answers == [("GET", "code")] * 4
        check(watch, service, shop)


def test_the_logout_confirmation_goes_back_to_the_registered_address(
    browser: Browser, service: str, shop: RelyingParty, artifacts: Path
) -> None:
    with watched_page(browser) as (page, watch):
        steps = Steps(page, service, artifacts)
        # (Facebook: Google's shape refuses Mallory's address, which it reports unverified.)
        registers_through_the_shop(page, service, shop, "Mallory Unverified", "Facebook")

        # Without the ID token authgate cannot tell that this browser asked: it asks first.
        page.get_by_role("link", name="Sign out of authgate, without the ID token").click()
        expect(page).to_have_url(re.compile(rf"^{re.escape(service)}/oauth2/logout\?"))
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign out of authgate?")
        expect(page.get_by_text("Example Shop asks authgate to sign you out.")).to_be_visible()
        expect(page.get_by_text("You will then go back to the application.")).to_be_visible()
        steps.shot("openid-cross-origin-logout-confirmation")

        # Confirmed: the form posts to authgate, whose redirect leads to the application.
        page.get_by_role("button", name="Sign out").click()
        expect(page).to_have_url(re.compile(rf"^{re.escape(shop.origin)}/signed-out\?"))
        expect(page.get_by_role("heading", level=1)).to_have_text("Signed out")

        # authgate's session is over: the application's next sign-in starts at its page.
        page.goto(f"{shop.origin}/")
        page.get_by_role("link", name="Sign in", exact=True).click()
        at_sign_in_page(page, service)
        check(watch, service, shop)


@pytest.fixture(scope="module")
def passkey_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """authgate at localhost (passkeys need a domain), the application at 127.0.0.1."""
    sections = {"clients": _client(f"http://127.0.0.1:{PASSKEY_APP_PORT}")}
    yield from _serve(tmp_path_factory.mktemp("authgate-openid-passkey"), sections)


def test_the_sign_in_page_s_passkey_brings_the_application_its_code(
    browser: Browser, passkey_service: str, artifacts: Path
) -> None:
    service = passkey_service
    shop = RelyingParty(
        host="127.0.0.1",
        port=PASSKEY_APP_PORT,
        issuer=service,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
    )
    try:
        with watched_page(browser) as (page, watch):
            virtual_authenticator(page)
            steps = Steps(page, service, artifacts)
            register_with_a_passkey(page, service, steps)
            sign_out(page)

            page.goto(f"{shop.origin}/")
            page.get_by_role("link", name="Sign in", exact=True).click()
            at_sign_in_page(page, service)
            clicked = int(time.time())
            page.get_by_role("button", name="Sign in with a passkey").click()
            at_consent_page(page, service)
            page.get_by_role("button", name="Allow").click()
            _, auth_time = signed_in(page, shop, "Ada Lovelace")
            # The passkey is the login the ID token reports.
            assert auth_time is not None and clicked <= auth_time <= time.time()
            steps.shot("openid-cross-origin-passkey")
            check(watch, service, shop)
        assert shop.problems == []
    finally:
        shop.close()
