"""`rest.access_log` switches the access log of `authgate serve` on (default) and off."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import base_config, merge


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(
    tmp_path: Path,
    rest: dict[str, object],
    overrides: dict[str, Any] | None = None,
    umask: int = -1,
) -> Iterator[tuple[int, list[str]]]:
    """`authgate serve` on a free port until the block ends (then SIGTERM, exit 0 asserted);
    yields the port and a list that receives the process's stderr when it has stopped.
    ``overrides`` are merged into the configuration; ``umask`` is the process's (-1: ours)."""
    port = free_port()
    config = merge(base_config(tmp_path), overrides or {})
    config = merge(config, {"rest": {"port": port, "host": "127.0.0.1", **rest}})
    path = tmp_path / "authgate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    process = subprocess.Popen(
        [sys.executable, "-m", "authgate.entrypoints.cli", "serve", "--config", str(path)],
        stderr=subprocess.PIPE,
        text=True,
        umask=umask,
    )
    stderr: list[str] = []
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("authgate serve did not start")
                time.sleep(0.1)
        yield port, stderr
    finally:
        process.send_signal(signal.SIGTERM)
        stderr.append(process.communicate(timeout=20)[1])
    assert process.returncode == 0, stderr


def serve_and_get(tmp_path: Path, access_log: bool) -> str:
    with (
        serving(tmp_path, {"access_log": access_log}) as (port, stderr),
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveness") as response,
    ):
        assert response.status == 200
    return stderr[0]


def test_access_log_on_by_default(tmp_path: Path) -> None:
    assert "authgate.access 127.0.0.1 GET /health/liveness 200" in serve_and_get(tmp_path, True)


def test_access_log_off(tmp_path: Path) -> None:
    stderr = serve_and_get(tmp_path, False)
    assert "authgate listening" in stderr
    assert "authgate.access" not in stderr


def test_a_malformed_request_is_one_info_line_not_a_traceback(tmp_path: Path) -> None:
    with (
        serving(tmp_path, {}) as (port, stderr),
        socket.create_connection(("127.0.0.1", port), timeout=5) as s,
    ):
        s.sendall(b"GET /health/liveness HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n\r\n")
        answer = s.recv(100)
    assert b" 400 " in answer.split(b"\r\n")[0]
    assert "malformed HTTP request from 127.0.0.1 refused: " in stderr[0]
    assert "Traceback" not in stderr[0]
    assert " ERROR " not in stderr[0]


def test_a_path_cannot_forge_an_access_log_line(tmp_path: Path) -> None:
    # %0A decodes to a newline, %1B to ESC: written as is, the path would add a line of its
    # own choosing to the log and drive the terminal of whoever reads it.
    forged = "/nowhere%0A2030-01-01%2000:00:00%20INFO%20authgate.access%20forged%1B[2J"
    with serving(tmp_path, {}) as (port, stderr):
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{forged}")
        assert answer.value.code == 404
    lines = [line for line in stderr[0].splitlines() if "nowhere" in line or "forged" in line]
    assert len(lines) == 1, stderr[0]
    assert lines[0].endswith(
        " authgate.access 127.0.0.1 GET /nowhere\\n2030-01-01 00:00:00 INFO authgate.access "
        "forged\\x1b[2J 404 " + lines[0].rsplit(" ", 1)[1]
    )
    assert "\x1b" not in stderr[0]
