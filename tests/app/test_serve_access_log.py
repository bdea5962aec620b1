"""`rest.access_log` switches the access log of `authgate serve` on (default) and off."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from .conftest import base_config, merge


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_and_get(tmp_path: Path, access_log: bool) -> str:
    port = free_port()
    config = merge(
        base_config(tmp_path),
        {"rest": {"port": port, "host": "127.0.0.1", "access_log": access_log}},
    )
    path = tmp_path / "authgate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    process = subprocess.Popen(
        [sys.executable, "-m", "authgate.entrypoints.cli", "serve", "--config", str(path)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveness") as r:
                    assert r.status == 200
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("authgate serve did not start")
                time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    return stderr


def test_access_log_on_by_default(tmp_path: Path) -> None:
    assert "authgate.access 127.0.0.1 GET /health/liveness 200" in serve_and_get(tmp_path, True)


def test_access_log_off(tmp_path: Path) -> None:
    stderr = serve_and_get(tmp_path, False)
    assert "authgate listening" in stderr
    assert "authgate.access" not in stderr


def test_a_malformed_request_is_one_info_line_not_a_traceback(tmp_path: Path) -> None:
    port = free_port()
    config = merge(base_config(tmp_path), {"rest": {"port": port, "host": "127.0.0.1"}})
    path = tmp_path / "authgate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    process = subprocess.Popen(
        [sys.executable, "-m", "authgate.entrypoints.cli", "serve", "--config", str(path)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"GET /health/liveness HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n\r\n")
                    answer = s.recv(100)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("authgate serve did not start")
                time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert b" 400 " in answer.split(b"\r\n")[0]
    assert "malformed HTTP request from 127.0.0.1 refused: " in stderr
    assert "Traceback" not in stderr
    assert " ERROR " not in stderr
