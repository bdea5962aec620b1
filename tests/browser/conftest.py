"""A real ``authgate serve`` on a free loopback port, run from a temporary copy of the default
configuration (SQLite and keys in a temporary directory), and headless Debian Chromium."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.ports import free_ports

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


def _wait_ready(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"authgate serve exited early:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{base}/health/readiness", timeout=1) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"authgate serve did not become ready:\n{log.read_text()}")


def _serve(
    workdir: Path, sections: Mapping[str, Mapping[str, Any]] | None = None, **env_vars: str
) -> Iterator[str]:
    """Run ``authgate serve`` on the default configuration in ``workdir``; its base address.

    ``sections``: keys to set in the configuration's sections (``{"app": {"url": ...}}``),
    the rest of the default configuration (its ``${...}`` included) kept as it is. The base
    address is the one origin the default configuration names, ``http://localhost:{PORT}``
    (``PUBLIC_HOST`` in ``env_vars`` names another host)."""
    shutil.copy(ROOT / "config.default.yaml", workdir / "config.yaml")
    if sections:
        data = yaml.safe_load((workdir / "config.yaml").read_text())
        for name, values in sections.items():
            data[name] = {**data.get(name, {}), **values}
        (workdir / "config.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    port, metrics_port = free_ports(2)
    env = {
        **os.environ,
        "PORT": str(port),
        "METRICS_PORT": str(metrics_port),  # not the default 9464: parallel runs would collide
        "OTEL_SDK_DISABLED": "true",
        **env_vars,
    }
    log = workdir / "serve.log"
    authgate = Path(sys.executable).with_name("authgate")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(authgate), "serve", "--config", "config.yaml"],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://{env_vars.get('PUBLIC_HOST', 'localhost')}:{port}"
    try:
        _wait_ready(base, process, log)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        # Nothing secret reaches the log (codes, tokens and cookies never do).
        text = log.read_text()
        assert "code=" not in text and "id_token" not in text and "session=" not in text, text


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
