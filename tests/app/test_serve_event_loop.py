"""`rest.event_loop` chooses the loop a real `authgate serve` runs on: uvloop by
default when it is importable, asyncio otherwise or when asked; asking for uvloop where it cannot
be imported is a configuration error, from `authgate config check` and at start-up.

The start-up line names the loop as it runs (the running loop's type, not the setting), so an
operator sees which one serves."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.ports import free_ports

from .conftest import base_config, merge


def write_config(tmp_path: Path, rest: dict[str, Any]) -> tuple[Path, int]:
    base = base_config(tmp_path)
    [port] = free_ports(1, besides=(base["metrics"]["port"],))
    config = merge(base, {"rest": {"port": port, "host": "127.0.0.1", **rest}})
    path = tmp_path / "authgate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path, port


def without_uvloop(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import uvloop`` fails, as where it is not installed."""
    shadow = tmp_path / "no-uvloop" / "uvloop"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named uvloop')\n")
    path = os.pathsep.join(filter(None, [str(shadow.parent), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def authgate(*args: str) -> list[str]:
    return [sys.executable, "-m", "authgate.entrypoints.cli", *args]


def serve_once(tmp_path: Path, rest: dict[str, Any], env: dict[str, str] | None = None) -> str:
    """Start `authgate serve`, answer one request, stop it with SIGTERM; its stderr."""
    path, port = write_config(tmp_path, rest)
    process = subprocess.Popen(
        authgate("serve", "--config", str(path)), stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"authgate serve did not start: {process.communicate()[1]}")
                time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveness") as response:
            assert response.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        stderr = process.communicate(timeout=20)[1]
    assert process.returncode == 0, stderr
    return stderr


def listening_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "authgate listening on" in line]
    assert len(lines) == 1, stderr
    return lines[0]


def test_uvloop_by_default_when_installed(tmp_path: Path) -> None:
    assert listening_line(serve_once(tmp_path, {})).endswith("; event loop uvloop)")


def test_uvloop_when_asked(tmp_path: Path) -> None:
    line = listening_line(serve_once(tmp_path, {"event_loop": "uvloop"}))
    assert line.endswith("; event loop uvloop)")


def test_asyncio_when_asked(tmp_path: Path) -> None:
    line = listening_line(serve_once(tmp_path, {"event_loop": "asyncio"}))
    assert line.endswith("; event loop asyncio)")


def test_asyncio_by_default_without_uvloop(tmp_path: Path) -> None:
    stderr = serve_once(tmp_path, {}, env=without_uvloop(tmp_path))
    assert listening_line(stderr).endswith("; event loop asyncio)")


UNINSTALLED = "rest.event_loop: uvloop is not installed (pip install uvloop), or set asyncio"


def test_uvloop_asked_but_not_installed_stops_start_up(tmp_path: Path) -> None:
    path, _ = write_config(tmp_path, {"event_loop": "uvloop"})
    run = subprocess.run(
        authgate("serve", "--config", str(path)),
        capture_output=True,
        text=True,
        timeout=60,
        env=without_uvloop(tmp_path),
        check=False,
    )
    assert run.returncode == 2
    assert run.stderr == f"authgate: configuration error in {path}: {UNINSTALLED}\n"


def test_uvloop_asked_but_not_installed_fails_config_check(tmp_path: Path) -> None:
    path, _ = write_config(tmp_path, {"event_loop": "uvloop"})
    run = subprocess.run(
        authgate("config", "check", "--config", str(path)),
        capture_output=True,
        text=True,
        timeout=60,
        env=without_uvloop(tmp_path),
        check=False,
    )
    assert run.returncode == 2
    assert UNINSTALLED in run.stderr


def test_config_check_accepts_both_loops(tmp_path: Path) -> None:
    for loop in ("uvloop", "asyncio"):
        path, _ = write_config(tmp_path, {"event_loop": loop})
        run = subprocess.run(
            authgate("config", "check", "--config", str(path)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert "rest.event_loop" not in run.stdout + run.stderr


def test_any_other_loop_is_a_configuration_error(tmp_path: Path) -> None:
    path, _ = write_config(tmp_path, {"event_loop": "tokio"})
    run = subprocess.run(
        authgate("serve", "--config", str(path)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 2
    assert f"configuration error in {path}: rest.event_loop: " in run.stderr
