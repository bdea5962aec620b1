"""A Redis for the tests: the one on 127.0.0.1:6379 when it answers, else a throwaway
``redis-server`` started from the installed binary on a free port (stopped at the end)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ports import free_port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisProcess:
    """``start()``, ``kill()`` (SIGKILL: an outage, not a shutdown), ``start()`` again on the
    same port; ``close()`` at the end."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("no redis-server binary")
        self.binary = binary
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="authgate-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not _answers(self.port):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.02)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    if _answers(6379):
        yield "redis://127.0.0.1:6379/0"
        return
    if shutil.which("redis-server") is None:
        pytest.fail("no Redis on 127.0.0.1:6379 and no redis-server binary to start one")
    redis = RedisProcess()
    try:
        redis.start()
        yield redis.url
    finally:
        redis.close()
