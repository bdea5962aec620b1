"""The demo page in a real browser: register, link (form_post included), unlink, sign out,
sign in again, and a denied sign-in, each step photographed to ``test-artifacts/browser/``.

Every click goes through the real service: the sign-in initiation, the development identity
provider's pages, the real identity-provider adapters (discovery, token exchange with PKCE,
ID-token verification, the profile request, the Apple client-secret JWT), the callback with
its session cookie, and the account endpoints authenticated by that cookie.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response, expect, sync_playwright

from tests.browser.conftest import CHROMIUM_ARGS

# Answers >= 400 a page may get on purpose: the refused unlink of the last provider, and the
# unlink of an old sign-in that must sign in again first (test_step_up_in_chromium). A page
# that knows it is signed out does not ask for the account, and the demo has an icon.
EXPECTED_FAILURES = {
    ("DELETE", "/v1/account/providers/google", 409),
    ("DELETE", "/v1/account/providers/facebook", 401),
}


@pytest.fixture
def page(chromium_path: Path, served: str) -> Iterator[Page]:
    """A fresh browser page; afterwards: no request went anywhere but the service (no CDN),
    no answer failed unexpectedly, and no script error or refused content security policy."""
    requested: list[str] = []
    failed: list[tuple[str, str, int]] = []
    errors: list[str] = []

    def answered(response: Response) -> None:
        path = urlsplit(response.url).path
        if response.status >= 400:
            failed.append((response.request.method, path, response.status))

    def console(message: ConsoleMessage) -> None:
        # HTTP failures are checked above, by URL and status.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            errors.append(message.text)

    with sync_playwright() as p:
        browser: Browser = p.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1000, "height": 900})
            page = context.new_page()
            page.set_default_timeout(10_000)
            page.on("request", lambda r: requested.append(r.url))
            page.on("response", answered)
            page.on("console", console)
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page
        finally:
            browser.close()
    assert requested
    assert [u for u in requested if not u.startswith(served + "/")] == []
    assert set(failed) <= EXPECTED_FAILURES, failed
    assert errors == []


class Steps:
    def __init__(self, page: Page, base: str, artifacts: Path) -> None:
        self.page = page
        self.base = base
        self.artifacts = artifacts
        self.n = 0

    def shot(self, name: str) -> None:
        self.n += 1
        self.page.screenshot(path=str(self.artifacts / f"{self.n:02d}-{name}.png"), full_page=True)

    def at_provider(self, provider: str) -> None:
        expect(self.page).to_have_url(re.compile(r"/dev/idp/authorize\?"))
        expect(self.page.get_by_role("heading", level=1)).to_have_text(f"Sign in with {provider}")

    def choose_user(self, name: str) -> None:
        self.page.get_by_role("button", name=re.compile(f"^Continue as {name}")).click()

    def linked_providers(self) -> list[str]:
        rows = self.page.locator("#linked-providers tr")
        return [rows.nth(i).get_attribute("data-provider") or "" for i in range(rows.count())]


def test_register_link_unlink_sign_out_sign_in_and_deny(
    page: Page, served: str, artifacts: Path
) -> None:
    steps = Steps(page, served, artifacts)
    notice = page.locator("#notice")
    problem = page.locator("#problem")

    # Open the demo: signed out, a sign-in and a register button per provider.
    page.goto(f"{served}/demo")
    expect(page.get_by_role("heading", name="Sign in to your account")).to_be_visible()
    for provider in ("Google", "Facebook", "Apple"):
        expect(page.get_by_role("link", name=f"Register with {provider}")).to_be_visible()
        expect(page.get_by_role("link", name=f"Sign in with {provider}")).to_be_visible()
    steps.shot("demo-signed-out")

    # Register with provider 1 (google: OpenID Connect, ID token).
    page.get_by_role("link", name="Register with Google").click()
    steps.at_provider("Google")
    steps.shot("dev-idp-choose-user")
    steps.choose_user("Ada Lovelace")
    expect(page).to_have_url(re.compile(r"/demo/onboarding$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
    expect(notice).to_contain_text("Your account was created with Google")
    expect(page.locator("#account-email")).to_have_text("ada@example.test")
    assert steps.linked_providers() == ["google"]
    steps.shot("registered-with-google")

    # Link provider 2 (facebook: explicit endpoints, profile request with appsecret_proof).
    page.get_by_role("link", name="Link Facebook").click()
    steps.at_provider("Facebook")
    steps.choose_user("Ada Lovelace")
    expect(notice).to_have_text("Facebook is now linked to your account.")
    assert steps.linked_providers() == ["google", "facebook"]
    steps.shot("linked-facebook")

    # Link provider 3 (apple: ES256 client-secret JWT, answer by form_post).
    page.get_by_role("link", name="Link Apple").click()
    steps.at_provider("Apple")
    steps.choose_user("Ada Lovelace")
    expect(notice).to_have_text("Apple is now linked to your account.")
    assert steps.linked_providers() == ["google", "facebook", "apple"]
    expect(page.locator("#link-none")).to_be_visible()
    steps.shot("linked-apple-form-post")

    # Unlink it, and the second one; the last one is refused.
    page.get_by_role("button", name="Unlink Apple").click()
    expect(notice).to_have_text("Apple was unlinked from your account.")
    assert steps.linked_providers() == ["google", "facebook"]
    steps.shot("unlinked-apple")
    page.get_by_role("button", name="Unlink Facebook").click()
    expect(notice).to_have_text("Facebook was unlinked from your account.")
    page.get_by_role("button", name="Unlink Google").click()
    expect(problem).to_contain_text("Google is the only provider linked to your account")
    assert steps.linked_providers() == ["google"]
    steps.shot("last-provider-refused")

    # Sign out.
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(notice).to_have_text("You are signed out.")
    expect(page.get_by_role("heading", name="Sign in to your account")).to_be_visible()
    page.reload()
    expect(page.get_by_role("link", name="Sign in with Google")).to_be_visible()
    assert page.request.get(f"{served}/v1/account").status == 401  # the cookie is gone
    steps.shot("signed-out")

    # Sign in again.
    page.get_by_role("link", name="Sign in with Google").click()
    steps.at_provider("Google")
    steps.choose_user("Ada Lovelace")
    expect(page).to_have_url(re.compile(r"/demo/dashboard$"))
    expect(notice).to_have_text("You are signed in with Google.")
    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
    steps.shot("signed-in-again")

    # A denied sign-in shows its message on the login page.
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(notice).to_have_text("You are signed out.")
    page.get_by_role("link", name="Sign in with Google").click()
    steps.at_provider("Google")
    page.get_by_role("button", name="Deny access").click()
    expect(page).to_have_url(re.compile(r"/demo/login\?error=access_denied&reason=user_denied$"))
    expect(problem).to_contain_text("You denied the request at the provider")
    expect(page.locator("#problem-codes")).to_have_text("error: access_denied, reason: user_denied")
    steps.shot("denied-sign-in")

    # A sign-in with a provider identity that has no account.
    page.get_by_role("link", name="Sign in with Facebook").click()
    steps.at_provider("Facebook")
    steps.choose_user("Grace Hopper")
    expect(problem).to_contain_text("There is no account for that provider identity yet")
    steps.shot("no-account")


def test_docs_page_renders_the_openapi_document(page: Page, served: str, artifacts: Path) -> None:
    page.goto(f"{served}/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("authgate")
    for path in ("/v1/account", "/v1/account/providers/{provider}", "/v1/auth/logout"):
        expect(page.locator(f'.opblock-summary-path[data-path="{path}"]').first).to_be_visible()
    page.screenshot(path=str(artifacts / "docs.png"), full_page=False)
