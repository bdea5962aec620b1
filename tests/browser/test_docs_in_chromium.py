"""/docs (Swagger UI on the service's OpenAPI document) in a real browser: operations grouped
under described tags, each with its summary; an expanded operation shows what its parameters
mean (the configured providers) and its errors by name. Photographed to
``test-artifacts/browser/docs-described.png`` (the groups) and ``docs-operation.png``."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, expect

from tests.browser.support import watched_page


def test_docs_groups_and_describes_the_operations(
    browser: Browser, served: str, artifacts: Path
) -> None:
    with watched_page(browser, viewport={"width": 1280, "height": 1600}) as (page, watch):
        page.goto(f"{served}/docs")
        # One heading per tag, with the tag's description beside it.
        for tag in ("sign-in", "account", "service"):
            expect(page.locator(f'.opblock-tag[data-tag="{tag}"]')).to_be_visible()
        expect(page.locator('.opblock-tag[data-tag="sign-in"]')).to_contain_text(
            "Signing in with an identity provider"
        )
        # Operations sit under their tag, each with its summary beside its path.
        start = page.locator("#operations-sign-in-start_sign_in")
        expect(start.locator(".opblock-summary-description")).to_have_text(
            "Start signing in with a provider"
        )
        expect(page.locator("#operations-account-unlink_provider")).to_contain_text(
            "Unlink a provider"
        )
        page.screenshot(path=str(artifacts / "docs-described.png"), full_page=True)
        start.locator(".opblock-summary").click()
        body = start.locator(".opblock-body")
        expect(body.locator(".opblock-description-wrapper")).to_contain_text(
            "Stores a pending sign-in"
        )
        provider = body.locator('tr[data-param-name="provider"]')
        expect(provider).to_contain_text("A configured identity provider: google")
        expect(body.locator('tr[data-param-name="intent"]')).to_contain_text("reauthenticate")
        expect(body.locator('.response[data-code="400"]')).to_contain_text(
            "Bad Request: invalid_provider"
        )
        expect(body.locator('.response[data-code="429"]')).to_contain_text("rate_limited")
        page.screenshot(path=str(artifacts / "docs-operation.png"), full_page=False)
        watch.check(served)
