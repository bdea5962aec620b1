"""What the browser tests watch on a page: where it sent requests, the answers that failed,
and every console message (an HTTP failure logs "Failed to load resource" there too)."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Browser, ConsoleMessage, Page, Response

# A Chromium on a phone, for the device list (its sessions name it "Safari on iOS").
IPHONE_UA = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
)
ANDROID_UA = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Mobile Safari/537.36"
)


class Watch:
    def __init__(self, page: Page) -> None:
        self.requested: list[str] = []
        self.failed: list[tuple[str, str, int]] = []
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requested.append(r.url))
        page.on("response", self._answered)
        page.on("console", self._logged)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _answered(self, response: Response) -> None:
        if response.status >= 400:
            path = urlsplit(response.url).path
            self.failed.append((response.request.method, path, response.status))

    def _logged(self, message: ConsoleMessage) -> None:
        self.console.append((message.type, message.text))

    def check(
        self,
        base: str,
        expected_failures: Collection[tuple[str, str, int]] = (),
        *,
        elsewhere: Collection[str] = (),
    ) -> None:
        """Only the service (and the origins ``elsewhere``: an application's own) was asked,
        only the expected answers failed, and the console holds no error or warning but the
        expected failures' own lines."""
        allowed = tuple(f"{b}/" for b in (base, *elsewhere))
        assert [u for u in self.requested if not u.startswith(allowed)] == []
        assert set(self.failed) <= set(expected_failures), self.failed
        problems = [
            text
            for kind, text in self.console
            if kind in ("error", "warning")
            and not (expected_failures and text.startswith("Failed to load resource"))
        ]
        assert problems == [] and self.errors == [], (problems, self.errors)


@contextmanager
def watched_page(browser: Browser, **context: Any) -> Iterator[tuple[Page, Watch]]:
    """A page in a fresh browser context (its own cookies and storage: another device)."""
    ctx = browser.new_context(**{"viewport": {"width": 1000, "height": 900}, **context})
    try:
        page = ctx.new_page()
        page.set_default_timeout(10_000)
        yield page, Watch(page)
    finally:
        ctx.close()
