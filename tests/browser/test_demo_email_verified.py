"""The demo page says whether the account's email address is verified: only when the provider
vouched for it (Ada at the google shape), not when it did not say (the facebook shape) — the
development provider's Mallory, whose address it reports unverified, is shown unverified."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_demo_in_chromium import page  # noqa: F401  (the checked page fixture)


@pytest.mark.parametrize(
    ("provider", "user", "email", "status"),
    [
        ("Google", "Ada Lovelace", "ada@example.test", "verified"),
        ("Facebook", "Mallory Unverified", "mallory@example.test", "not verified"),
    ],
)
def test_demo_shows_whether_the_email_is_verified(
    page: Page,  # noqa: F811
    served: str,
    artifacts: Path,
    provider: str,
    user: str,
    email: str,
    status: str,
) -> None:
    page.goto(f"{served}/demo")
    page.get_by_role("link", name=f"Register with {provider}").click()
    expect(page).to_have_url(re.compile(r"/dev/idp/authorize\?"))
    page.get_by_role("button", name=re.compile(f"^Continue as {user}")).click()
    expect(page).to_have_url(re.compile(r"/demo/onboarding$"))
    expect(page.locator("#account-email")).to_have_text(email)
    expect(page.locator("#account-email-status")).to_be_visible()
    expect(page.locator("#account-email-status")).to_have_text(status)
    page.screenshot(path=str(artifacts / f"email-{provider.lower()}.png"), full_page=True)
