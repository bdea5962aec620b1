"""A Redis for the tests: the one on 127.0.0.1:6379 when it answers, else a throwaway
``redis-server`` started from the installed binary on a free port (stopped at the end)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    if _answers(6379):
        yield "redis://127.0.0.1:6379/0"
        return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("no Redis on 127.0.0.1:6379 and no redis-server binary to start one")
    port = _free_port()
    workdir = tempfile.mkdtemp(prefix="authgate-redis-")
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not _answers(port):
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail("the throwaway redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)
