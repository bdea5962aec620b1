"""The demo page in a real browser: an old session is asked to sign in again before it may
unlink a provider (RFC 9470), and the re-authentication opens account changes again."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_demo_in_chromium import Steps, page  # noqa: F401 - the page fixture


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
    problem = page.locator("#problem")
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
    expect(problem).to_contain_text("needs a recent sign-in")
    expect(page.locator("#problem-codes")).to_have_text("error: reauthentication_required")
    assert steps.linked_providers() == ["google", "facebook"]
    steps.shot("step-up-asked")

    page.get_by_role("link", name=re.compile("^Sign in again with Google")).click()
    steps.at_provider("Google")
    steps.choose_user("Grace Hopper")
    expect(notice).to_contain_text("You signed in again with Google")
    page.get_by_role("button", name="Unlink Facebook").click()
    expect(notice).to_have_text("Facebook was unlinked from your account.")
    assert steps.linked_providers() == ["google"]
    steps.shot("step-up-done")
