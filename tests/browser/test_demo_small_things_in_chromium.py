"""What a person sees around the demo's flows, in a real browser: a signed-out visit logs
nothing in the console (no failing account probe, no missing icon), the page has an icon, and
on a phone (375 px wide) the header stays on one line, nothing scrolls the page sideways and a
linked provider shows what it calls the person, not the API's identifier."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.browser.support import watched_page

PHONE = {"width": 375, "height": 812}


def test_a_signed_out_visit_logs_nothing_and_has_an_icon(
    browser: Browser, served: str, artifacts: Path
) -> None:
    with watched_page(browser) as (page, watch):
        page.goto(f"{served}/demo")
        expect(page.get_by_role("link", name="Sign in with Google")).to_be_visible()
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(artifacts / "signed-out-quiet.png"), full_page=True)
        # Signed out and known to be: the account is not asked for, so nothing fails.
        assert f"{served}/v1/account" not in watch.requested
        assert watch.failed == [] and watch.console == [], (watch.failed, watch.console)

        # The page's icon, and the one a page without its own icon gets (/favicon.ico).
        icon = page.locator('link[rel="icon"]')
        href = icon.get_attribute("href") or ""
        for path in (href, "/favicon.ico"):
            answer = page.request.get(f"{served}{path}")
            assert answer.status == 200, path
            assert answer.headers["content-type"].startswith("image/svg+xml"), path
            assert answer.body().startswith(b"<svg")

        # Through a sign-in (the provider's page asks for /favicon.ico) and a sign-out: still
        # nothing fails, and the signed-out page after a reload asks nothing either.
        page.get_by_role("link", name="Register with Google").click()
        page.get_by_role("button", name=re.compile("^Continue as Grace Hopper")).click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Grace Hopper")
        page.get_by_role("button", name="Sign out", exact=True).click()
        expect(page.locator("#notice")).to_have_text("You are signed out.")
        asked = len(watch.requested)
        page.reload()
        expect(page.get_by_role("link", name="Sign in with Google")).to_be_visible()
        page.wait_for_load_state("networkidle")
        assert not [u for u in watch.requested[asked:] if "/v1/account" in u]
        assert page.request.get(f"{served}/v1/account").status == 401  # the cookie is gone
        watch.check(served)
        assert watch.console == [], watch.console


def header_boxes(page: Page) -> dict[str, dict[str, float]]:
    boxes: dict[str, dict[str, float]] = page.evaluate(
        """() => {
            const box = (node) => {
                const r = node.getBoundingClientRect();
                const line = parseFloat(getComputedStyle(node).lineHeight) || 24;
                return { top: r.top, bottom: r.bottom, left: r.left, right: r.right,
                         height: r.height, line };
            };
            const links = [...document.querySelectorAll("header nav a")];
            return Object.fromEntries([
                ["header", box(document.querySelector("header"))],
                ["brand", box(document.querySelector("header .brand"))],
                ...links.map((a, i) => [`link${i}`, box(a)]),
            ]);
        }"""
    )
    return boxes


def test_on_a_phone_the_header_stays_on_one_line_and_a_provider_names_the_person(
    browser: Browser, served: str, artifacts: Path
) -> None:
    with watched_page(browser, viewport=PHONE) as (page, watch):
        page.goto(f"{served}/demo")
        expect(page.get_by_role("link", name="Sign in with Google")).to_be_visible()
        page.screenshot(path=str(artifacts / "phone-signed-out.png"), full_page=True)
        boxes = header_boxes(page)
        links = [v for k, v in boxes.items() if k.startswith("link")]
        assert len(links) == 2
        # One line: the brand and both links share it, the header is one line tall (plus its
        # padding), and everything is inside the screen.
        for box in [boxes["brand"], *links]:
            assert abs(box["bottom"] - boxes["brand"]["bottom"]) <= 4, boxes
            assert box["height"] <= 1.5 * box["line"], boxes
            assert box["left"] >= 0 and box["right"] <= PHONE["width"], boxes
        assert boxes["header"]["height"] <= 2 * boxes["brand"]["line"] + 8, boxes
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

        page.get_by_role("link", name="Register with Google").click()
        page.get_by_role("button", name=re.compile("^Continue as Ada Lovelace")).click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ada Lovelace")
        expect(page.locator("#sessions li")).to_have_count(1)
        page.screenshot(path=str(artifacts / "phone-signed-in.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        boxes = header_boxes(page)
        assert boxes["header"]["height"] <= 2 * boxes["brand"]["line"] + 8, boxes

        # The identity at the provider is what the provider calls the person, not the API's
        # "user:google:<digits>".
        cell = page.locator("#linked-providers tr td").first
        expect(cell).to_contain_text("Ada Lovelace")
        expect(cell).not_to_contain_text("user:")
        watch.check(served)
