"""Stopping ``authgate serve`` as an operator (or an orchestrator) does: SIGTERM or SIGINT to
the process. It says so in its log, stops at once when idle, and lets a request in flight
finish first."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml

from tests.fakeidp import FakeIdP
from tests.fakeidp.model import TokenMode
from tests.install.support import Browser, dev_config, run, wait_ready
from tests.support.ports import free_port
from tests.support.waiting import eventually


class Served:
    """An ``authgate serve`` process on a configuration written under ``workdir``."""

    def __init__(self, workdir: Path, config: dict[str, Any]) -> None:
        self.port = config["rest"]["port"]
        self.base = f"http://127.0.0.1:{self.port}"
        self.path = workdir / "authgate.yaml"
        self.path.write_text(yaml.safe_dump(config))
        self.log = workdir / "serve.log"
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run(
            sys.executable, "-m", "authgate.entrypoints.cli", *args, "--config", str(self.path)
        )

    def start(self) -> None:
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "authgate.entrypoints.cli",
                    "serve",
                    "--config",
                    str(self.path),
                ],
                cwd=self.workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        wait_ready(self.base, self.gone)

    def gone(self) -> str | None:
        assert self.process is not None
        return None if self.process.poll() is None else self.log.read_text()

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> tuple[float, float]:
        """Send ``sig``; the seconds until the process has exited, and the CPU seconds it
        spent meanwhile (less sensitive than the first to a busy machine)."""
        assert self.process is not None
        pid = self.process.pid
        cpu_before = _cpu_seconds(pid)
        started = time.monotonic()
        self.process.send_signal(sig)
        _, status, usage = os.wait4(pid, 0)
        seconds = time.monotonic() - started
        self.process.returncode = os.waitstatus_to_exitcode(status)
        return seconds, usage.ru_utime + usage.ru_stime - cpu_before

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _cpu_seconds(pid: int) -> float:
    """The user and system CPU time of a running process (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _config(tmp_path: Path, database_url: str, **overrides: Any) -> dict[str, Any]:
    config = dev_config(free_port(), database_url, tmp_path)
    for section, values in overrides.items():
        config.setdefault(section, {}).update(values)
    return config


@pytest.fixture(params=["sqlite", "postgres", "postgres+redis"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    overrides: dict[str, Any] = {}
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'authgate.db'}"
    else:
        url = request.getfixturevalue("empty_postgres_url")
    if request.param == "postgres+redis":
        redis = request.getfixturevalue("redis_url")
        overrides = {"session": {"revocation_channel": "redis"}, "ratelimit": {"storage": redis}}
    service = Served(tmp_path, _config(tmp_path, url, **overrides))
    if request.param != "sqlite":
        service.command("migrate")
    try:
        yield service
    finally:
        service.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_idle_service_stops_at_once_and_says_so(served: Served, sig: signal.Signals) -> None:
    served.start()
    time.sleep(0.5)  # idle: no request in flight, the background tasks waiting
    seconds, cpu = served.stop(sig)
    log = served.log.read_text()
    assert served.process is not None and served.process.returncode == 0, log
    # It says that it heard the signal, and when it is done.
    lines = log.splitlines()
    stopping = [line for line in lines if "authgate stopping" in line]
    assert len(stopping) == 1, log
    assert f"authgate stopping ({sig.name}): no new connections" in stopping[0]
    assert "requests in flight may finish within 30 s" in stopping[0]
    assert re.search(r"authgate stopped in \d+\.\d{3} s$", lines[-1]), lines[-1]
    # At once: no poll, sleep or timeout waited out; no garbage collection of everything
    # before exiting (a quarter of a second of CPU, seconds of waiting on a busy machine).
    assert seconds < 1.0, (seconds, log)
    assert cpu < 0.12, (cpu, log)


async def test_a_request_in_flight_finishes_before_the_service_stops(tmp_path: Path) -> None:
    """A sign-in whose callback waits on the provider's token endpoint when SIGTERM arrives:
    the service stops taking connections, the callback completes, then the process exits 0."""
    async with FakeIdP() as idp:
        config = _config(tmp_path, f"sqlite:///{tmp_path / 'authgate.db'}")
        config["providers"] = {"google": idp.config("google")}
        config["dev"] = {"identity_provider": False}
        served = Served(tmp_path, config)
        await asyncio.to_thread(served.start)
        try:
            browser = Browser(served.base)
            callback = f"{served.base}/v1/auth/google/callback"
            query = urlencode({"redirect_uri": callback, "intent": "register"})
            status, _, body = await asyncio.to_thread(
                browser.request,
                "GET",
                f"/v1/auth/google?{query}",
                {"Accept": "application/json", "Sec-Fetch-Site": "same-origin"},
            )
            assert status == 200, body
            back = await idp.authorize(json.loads(body)["authorizationUrl"])
            idp.google.token_mode = TokenMode.SLOW
            idp.google.token_release = asyncio.Event()

            in_flight = asyncio.ensure_future(asyncio.to_thread(browser.request, "GET", back.url))
            await eventually(
                lambda: bool(idp.google.requests_to("token")), what="the token request"
            )
            stop = asyncio.ensure_future(asyncio.to_thread(served.stop, signal.SIGTERM))
            await eventually(lambda: "authgate stopping" in served.log.read_text(), what="the stop")
            await asyncio.sleep(0.3)
            assert not in_flight.done() and not stop.done()  # waiting for the request

            idp.google.token_release.set()
            status, headers, body = await asyncio.wait_for(in_flight, 20)
            assert status == 302, body
            assert headers["Location"] == "https://app.example.com/onboarding"
            await asyncio.wait_for(stop, 20)
            assert served.process is not None and served.process.returncode == 0
            log = served.log.read_text()
            assert "GET /v1/auth/google/callback 302" in log
            assert log.index("authgate stopping") < log.index("authgate stopped")
        finally:
            served.kill()
