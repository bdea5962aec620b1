"""Passkeys in a real browser: Chromium's virtual authenticator (CDP ``WebAuthn``: CTAP2,
internal transport, resident keys, user verification) adds a passkey on the demo page and
signs in with it, again after the service restarted, and not once the passkey is removed.

The default configuration puts every face on ``http://localhost:{PORT}``: browsers take a domain
as the RP ID, never an IP address, and its RP ID is ``localhost``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, CDPSession, Page, expect

from tests.browser.conftest import _serve
from tests.browser.support import ANDROID_UA, watched_page
from tests.browser.test_demo_in_chromium import Steps


class Instance:
    """``authgate serve`` on the default configuration in one folder (its SQLite database and
    keys outlive the process), started and stopped at will."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._running: Iterator[str] | None = None
        self.base = ""

    def start(self, **env: str) -> str:
        self._running = _serve(self.workdir, **env)
        self.base = next(self._running)
        return self.base

    def stop(self) -> None:
        if self._running is not None:
            self._running.close()  # SIGTERM, and the log checked for secrets
            self._running = None


@pytest.fixture
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    running = Instance(tmp_path_factory.mktemp("authgate-passkeys"))
    try:
        yield running
    finally:
        running.stop()


def virtual_authenticator(page: Page) -> Authenticator:
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable", {"enableUI": False})
    added = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return Authenticator(cdp, added["authenticatorId"])


class Authenticator:
    """The virtual authenticator's credentials, taken away and given back: a browser whose
    authenticator holds no passkey for the page offers none in the passkey field."""

    def __init__(self, cdp: CDPSession, authenticator_id: str) -> None:
        self.cdp, self.id = cdp, authenticator_id
        self._kept: list[dict[str, object]] = []

    def take_credentials(self) -> None:
        found = self.cdp.send("WebAuthn.getCredentials", {"authenticatorId": self.id})
        self._kept = found["credentials"]
        assert self._kept
        self.cdp.send("WebAuthn.clearCredentials", {"authenticatorId": self.id})

    def give_back(self) -> None:
        for credential in self._kept:
            self.cdp.send(
                "WebAuthn.addCredential", {"authenticatorId": self.id, "credential": credential}
            )


def register_with_a_passkey(page: Page, base: str, steps: Steps) -> None:
    """Ada registers on the demo with Google and adds a passkey (kept by the virtual
    authenticator)."""
    page.goto(f"{base}/demo")
    page.get_by_role("link", name="Register with Google").click()
    steps.choose_user("Ada Lovelace")
    page.get_by_role("button", name="Add a passkey").click()
    expect(page.locator("#passkeys li")).to_have_count(1)


def demo_app_request(base: str) -> str:
    """The query of an authorization request of the demo application (code flow, PKCE)."""
    return urlencode(
        {
            "response_type": "code",
            "client_id": "demo-app",
            "redirect_uri": f"{base}/demo/app/callback",
            "scope": "openid profile",
            "state": "s-123",
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
        }
    )


def sign_out(page: Page) -> None:
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page.get_by_role("button", name="Sign in with a passkey")).to_be_visible()


def sign_in_with_passkey(page: Page) -> None:
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
    expect(page.locator("#notice")).to_have_text("You are signed in with a passkey.")


def test_a_passkey_signs_in_also_after_a_restart_and_not_once_removed(
    browser: Browser, instance: Instance, artifacts: Path
) -> None:
    base = instance.start()
    with watched_page(browser) as (page, watch):
        virtual_authenticator(page)
        steps = Steps(page, base, artifacts)
        page.goto(f"{base}/demo")
        page.get_by_role("link", name="Register with Google").click()
        steps.choose_user("Ada Lovelace")
        expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
        expect(page.locator("#passkeys-none")).to_be_visible()
        watch.requested.clear()

        page.get_by_role("button", name="Add a passkey").click()
        expect(page.locator("#notice")).to_have_text(re.compile("^A passkey was added"))
        expect(page.locator("#passkeys li")).to_have_count(1)
        steps.shot("passkey-added")

        sign_out(page)
        sign_in_with_passkey(page)
        sessions = page.locator("#sessions li .hint")
        expect(sessions.first).to_contain_text("Signed in with a passkey")
        watch.check(base)

        # The service restarts (another port: the same RP ID, its origin allowed again).
        instance.stop()
        base = instance.start()
        watch.requested.clear()
        page.goto(f"{base}/demo")  # another origin (port): the page remembers no sign-in
        sign_in_with_passkey(page)
        steps.shot("signed-in-after-restart")

        # Removed (Google stays linked, so it may go), it no longer signs in.
        page.get_by_role("button", name=re.compile("^Remove the passkey")).click()
        expect(page.locator("#notice")).to_have_text(re.compile("was removed"))
        expect(page.locator("#passkeys li")).to_have_count(0)
        sign_out(page)
        page.get_by_role("button", name="Sign in with a passkey").click()
        expect(page.locator("#problem-text")).to_contain_text("No account has that passkey")
        expect(page.locator("#problem-codes")).to_have_text("error: unknown_passkey")
        expect(page.locator("#signed-out")).to_be_visible()
        steps.shot("removed-passkey-refused")
        watch.check(base, {("POST", "/v1/passkeys/authentication", 401)})


def test_the_sign_in_page_of_the_openid_provider_signs_in_with_a_passkey(
    browser: Browser, instance: Instance, artifacts: Path
) -> None:
    base = instance.start()
    with watched_page(browser) as (page, _):
        virtual_authenticator(page)
        steps = Steps(page, base, artifacts)
        register_with_a_passkey(page, base, steps)
        sign_out(page)

        # The demo application's authorization request, by a browser signed out of authgate.
        page.goto(f"{base}/oauth2/authorize?{demo_app_request(base)}")
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        page.get_by_role("button", name="Sign in with a passkey").click()
        # Signed in, the request resumes: the application asks for consent.
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "Allow Demo application to use your account?"
        )
        steps.shot("openid-provider-passkey-consent")


def test_a_passkey_sign_in_is_the_way_back_to_a_fresh_session(
    browser: Browser, instance: Instance, artifacts: Path
) -> None:
    base = instance.start(REAUTHENTICATE_AFTER="4")
    with watched_page(browser) as (page, _):
        virtual_authenticator(page)
        steps = Steps(page, base, artifacts)
        register_with_a_passkey(page, base, steps)
        sign_out(page)
        sign_in_with_passkey(page)
        page.wait_for_timeout(4500)  # the passkey sign-in is no longer recent
        page.get_by_role("button", name=re.compile("^Remove the passkey")).click()
        prompt = page.get_by_role("region", name="Sign in again to continue")
        expect(prompt).to_contain_text("needs a recent sign-in")
        prompt.get_by_role("button", name="Sign in again with a passkey").click()
        # Fresh again: the removal asked for (a change needing a recent sign-in) is done.
        expect(page.locator("#notice")).to_have_text(
            re.compile(r"^You are signed in with a passkey\. The passkey .+ was removed\.$")
        )
        expect(page.locator("#passkeys li")).to_have_count(0)
        steps.shot("passkey-step-up")


def test_the_passkey_field_offers_the_device_s_passkeys(
    browser: Browser, instance: Instance, artifacts: Path
) -> None:
    """Autofill (WebAuthn conditional mediation): the field's request runs without a dialog
    once it has the focus, and the virtual authenticator answers it as a person choosing the
    suggested passkey would. Without a passkey to offer, the request waits, and the button
    still signs in while it does."""
    base = instance.start()
    with watched_page(browser) as (page, watch):
        authenticator = virtual_authenticator(page)
        steps = Steps(page, base, artifacts)
        register_with_a_passkey(page, base, steps)
        watch.requested.clear()
        sign_out(page)

        page.get_by_label("Passkey", exact=True).focus()
        expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
        expect(page.locator("#notice")).to_have_text("You are signed in with a passkey.")
        steps.shot("passkey-autofill")
        watch.check(base)

        sign_out(page)
        authenticator.take_credentials()
        page.get_by_label("Passkey", exact=True).focus()
        page.wait_for_timeout(500)  # the field's request waits: nothing to offer
        expect(page.locator("#signed-out")).to_be_visible()
        authenticator.give_back()
        sign_in_with_passkey(page)


def test_the_sign_in_page_s_passkey_field_resumes_the_authorization_request(
    browser: Browser, instance: Instance, artifacts: Path
) -> None:
    base = instance.start()
    with watched_page(browser) as (page, _):
        authenticator = virtual_authenticator(page)
        steps = Steps(page, base, artifacts)
        register_with_a_passkey(page, base, steps)
        sign_out(page)
        authorize = f"{base}/oauth2/authorize?{demo_app_request(base)}"

        # Nothing to offer: the field's request waits; the button ends it and signs in.
        authenticator.take_credentials()
        page.goto(authorize)
        page.get_by_label("Or choose it here").focus()
        page.wait_for_timeout(500)
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        authenticator.give_back()
        page.get_by_role("button", name="Sign in with a passkey").click()
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "Allow Demo application to use your account?"
        )

        # A browser without authgate's cookies: the field alone signs in and resumes it.
        page.context.clear_cookies()
        page.goto(authorize)
        page.get_by_label("Or choose it here").focus()
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "Allow Demo application to use your account?"
        )
        steps.shot("openid-provider-passkey-autofill")


def test_after_a_sign_in_that_proved_nothing_the_account_page_offers_a_passkey(
    browser: Browser, instance: Instance, artifacts: Path
) -> None:
    """Browsers never offer to create a passkey after a federated sign-in on their own: after a
    provider sign-in that proved no login time (the facebook shape has no ID token, so no
    signed auth_time), the account page offers one while the account has none. It depends on
    the session's proven time only: not after Google's (a signed auth_time), nor once a
    passkey is there."""
    base = instance.start()
    with watched_page(browser) as (page, _):
        virtual_authenticator(page)
        steps = Steps(page, base, artifacts)
        offer = page.get_by_role("region", name="Add a passkey")

        page.goto(f"{base}/demo")
        page.get_by_role("link", name="Register with Facebook").click()
        steps.choose_user("Grace Hopper")
        expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Grace Hopper")
        expect(offer).to_be_visible()
        expect(offer).to_contain_text("Your sign-in with Facebook did not prove")
        steps.shot("passkey-offer-after-facebook")
        # The account has no way to prove a login: right after its sign-in it may add its
        # first passkey, the way it gains one.
        offer.get_by_role("button", name="Add a passkey now").click()
        expect(page.locator("#passkeys li")).to_have_count(1)
        expect(offer).to_be_hidden()
        sign_out_of_the_demo(page)

        # Google signs its auth_time: nothing to offer. Then Ada adds a passkey, links
        # Facebook and signs in with it: a sign-in that proved nothing, but she has a passkey.
        page.get_by_role("link", name="Register with Google").click()
        steps.choose_user("Ada Lovelace")
        expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
        expect(page.locator("#passkeys-none")).to_be_visible()
        expect(offer).to_be_hidden()
        page.get_by_role("button", name="Add a passkey").click()
        expect(page.locator("#passkeys li")).to_have_count(1)
        expect(page.locator("#passkeys li .hint")).to_contain_text("(this session)")
        page.get_by_role("link", name="Link Facebook").click()
        steps.choose_user("Ada Lovelace")
        expect(page.locator("#notice")).to_have_text("Facebook is now linked to your account.")
        sign_out_of_the_demo(page)
        page.get_by_role("link", name="Sign in with Facebook").click()
        steps.choose_user("Ada Lovelace")
        expect(page.locator("#passkeys li")).to_have_count(1)
        expect(page.locator("#sessions li[data-current='true']")).to_contain_text("Facebook")
        expect(offer).to_be_hidden()


def test_an_account_that_cannot_prove_a_login_is_asked_to_sign_in_again_then_adds_a_passkey(
    browser: Browser, instance: Instance, artifacts: Path
) -> None:
    """Signed up through facebook (no signed login time), once that sign-in is older than the
    window: the page does not offer facebook's re-authentication, which could prove nothing,
    but a new sign-in, after which the first passkey can be added."""
    base = instance.start(REAUTHENTICATE_AFTER="4")
    with watched_page(browser) as (page, _):
        virtual_authenticator(page)
        steps = Steps(page, base, artifacts)
        offer = page.get_by_role("region", name="Add a passkey")
        page.goto(f"{base}/demo")
        page.get_by_role("link", name="Register with Facebook").click()
        steps.choose_user("Grace Hopper")
        expect(offer).to_be_visible()
        time.sleep(4.5)  # the sign-in grows older than the 4-second window
        offer.get_by_role("button", name="Add a passkey now").click()
        prompt = page.get_by_role("region", name="Sign in again to continue")
        expect(prompt).to_contain_text("Facebook cannot prove when you last signed in there")
        steps.shot("passkey-offer-sign-in-again")
        page.get_by_role("link", name="Sign in again with Facebook").click()
        steps.choose_user("Grace Hopper")
        expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Grace Hopper")
        # The passkey asked for is added on the return, without a second click.
        expect(page.locator("#passkeys li")).to_have_count(1)
        expect(page.locator("#notice")).to_contain_text("A passkey was added")
        expect(offer).to_be_hidden()


def sign_out_of_the_demo(page: Page) -> None:
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page.get_by_role("link", name="Register with Google")).to_be_visible()


def test_signing_out_everywhere_else_offers_to_remove_the_passkeys_those_sessions_added(
    browser: Browser, instance: Instance, artifacts: Path
) -> None:
    """A passkey shows where it was added; signing out everywhere else offers (ticked) to
    remove the passkeys the sessions it ends added: whoever held one of them could have added
    a passkey of their own."""
    base = instance.start()
    with (
        watched_page(browser) as (laptop, _),
        watched_page(browser, user_agent=ANDROID_UA) as (phone, _),
    ):
        steps = Steps(laptop, base, artifacts)
        laptop.goto(f"{base}/demo")
        laptop.get_by_role("link", name="Register with Google").click()
        steps.choose_user("Ada Lovelace")
        expect(laptop.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")

        # Another device signs in to the account and adds a passkey there.
        virtual_authenticator(phone)
        phone.goto(f"{base}/demo")
        phone.get_by_role("link", name="Sign in with Google").click()
        Steps(phone, base, artifacts).choose_user("Ada Lovelace")
        phone.get_by_role("button", name="Add a passkey").click()
        expect(phone.locator("#passkeys li")).to_have_count(1)

        laptop.reload()
        added = laptop.locator("#passkeys li")
        expect(added).to_have_count(1)
        expect(added).to_contain_text("from Chrome on Android · 127.0.0.1")
        remove_too = laptop.get_by_label(re.compile("Also remove the passkeys those sessions"))
        expect(remove_too).to_be_checked()
        expect(remove_too).to_have_accessible_name(re.compile("added: Chrome on Android$"))
        steps.shot("sign-out-everywhere-else-offers-passkeys")

        laptop.get_by_role("button", name="Sign out everywhere else").click()
        expect(laptop.locator("#notice")).to_contain_text(
            "The passkeys those sessions added were removed"
        )
        expect(laptop.locator("#passkeys li")).to_have_count(0)
        expect(laptop.locator("#sessions li")).to_have_count(1)
        phone.reload()
        expect(phone.locator("#signed-out")).to_be_visible()
