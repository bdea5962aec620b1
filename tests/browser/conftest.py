"""A real ``authgate serve`` on a free loopback port (``tests.support.served.serve``: a
temporary copy of the default configuration, SQLite and keys in a temporary directory), and
headless Debian Chromium."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.served import serve as _serve

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base address of a running service on the default configuration."""
    yield from _serve(tmp_path_factory.mktemp("authgate-served"))


@pytest.fixture(scope="module")
def served_short_window(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same, with account changes needing a sign-in of the last 4 seconds."""
    yield from _serve(tmp_path_factory.mktemp("authgate-step-up"), REAUTHENTICATE_AFTER="4")


@pytest.fixture(scope="module")
def chromium_path() -> Path:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("/usr/bin/chromium is missing: scripts/test installs Debian's chromium")
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    return CHROMIUM


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def browser(chromium_path: Path) -> Iterator[Any]:
    """Headless Chromium, for tests that need several devices (one context each)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()
