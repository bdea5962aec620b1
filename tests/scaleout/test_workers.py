"""``authgate serve --workers 2``: two worker processes on one port (SO_REUSEPORT) under one
parent, on one PostgreSQL database and one Redis.

* requests land on both workers (each counts what it served on its own metrics port,
  ``metrics.port + i``), and a session issued through either is accepted by both;
* a logout is refused by every worker at once (each its own revocation listener);
* SIGTERM to the parent stops both cleanly: exit 0, one stop line per worker, within a bound;
* SIGTERM to every process at once (systemd's default) still stops each worker gracefully;
* a worker that dies takes the service down (non-zero exit), for the service manager to restart;
  a parent that is killed takes its workers with it;
* on the embedded SQLite default, more than one worker is refused in one line (exit 2).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from bench.harness import (
    ServiceProcess,
    SignInDriver,
    authgate_command,
    free_port_run,
    migrate,
    service_config,
    write_config,
)
from tests.fakeidp import FakeIdP, FakeUser
from tests.support.postgres import PostgresServer
from tests.support.waiting import eventually

ROUTE = "/v1/account/providers"
ROUNDS = 40  # requests, each on a new connection: the kernel spreads them among the workers


def unique_address() -> str:
    return f"2001:db8:{secrets.token_hex(2)}:{secrets.token_hex(2)}::{secrets.token_hex(2)}"


@pytest.fixture
async def two_workers(
    tmp_path: Path, fake_idp: FakeIdP, postgres_server: PostgresServer, redis_url: str
) -> AsyncIterator[ServiceProcess]:
    name = postgres_server.create_database()
    try:
        config = service_config(
            tmp_path,
            fake_idp,
            database_url=postgres_server.url(name),
            ratelimit_storage=redis_url,
            overrides={
                "rest": {"workers": 2},
                "ratelimit": {"trusted_proxies": ["127.0.0.1/32"]},
                "metrics": {"port": free_port_run(2)},
            },
        )
        file = write_config(tmp_path, config)
        await asyncio.to_thread(migrate, file)
        async with ServiceProcess(file) as service:
            # It answers once worker 0 serves; the parent starts the other one then.
            await eventually(lambda: "with 2 workers" in service.log(), what="both workers serving")
            yield service
    finally:
        postgres_server.drop_database(name)


def metrics_port(service: ServiceProcess) -> int:
    return int(yaml.safe_load(service.config_file.read_text())["metrics"]["port"])


async def served(http: aiohttp.ClientSession, service: ServiceProcess, status: int) -> list[int]:
    """How many ``GET /v1/account/providers`` each worker answered with ``status``."""
    counts = []
    for index in (0, 1):
        async with http.get(f"http://127.0.0.1:{metrics_port(service) + index}/metrics") as r:
            assert r.status == 200
            text = await r.text()
        count = 0
        for line in text.splitlines():
            if (
                line.startswith("http_server_request_duration_seconds_count{")
                and f'http_route="{ROUTE}"' in line
                and f'http_response_status_code="{status}"' in line
            ):
                count += int(float(line.rsplit(" ", 1)[1]))
        counts.append(count)
    return counts


async def statuses(service: ServiceProcess, token: str, rounds: int = ROUNDS) -> list[int]:
    """``rounds`` reads of the account, each on a connection of its own."""
    out = []
    headers = {"Authorization": f"Bearer {token}", "Connection": "close"}
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as http:
        for _ in range(rounds):
            async with http.get(f"{service.url}{ROUTE}", headers=headers) as response:
                await response.read()
                out.append(response.status)
    return out


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def test_two_workers_serve_share_sessions_and_revocations_and_stop_cleanly(
    two_workers: ServiceProcess, fake_idp: FakeIdP
) -> None:
    service = two_workers
    pids = service.children()
    assert len(pids) == 2, service.log()
    async with SignInDriver(fake_idp) as driver, aiohttp.ClientSession() as http:
        signed = await driver.complete(
            service.url,
            user=FakeUser(sub="two-cores"),
            intent="register",
            headers={"X-Forwarded-For": unique_address()},
        )
        assert signed.signed_in and signed.session, signed
        token = signed.session
        # Whichever worker issued it, both accept it (and each now has it in its cache).
        assert await statuses(service, token) == [200] * ROUNDS
        accepted = await served(http, service, 200)
        assert sum(accepted) == ROUNDS
        assert min(accepted) > 0, f"one worker served nothing: {accepted}"

        async with http.post(
            f"{service.url}/v1/auth/logout", headers={"Authorization": f"Bearer {token}"}
        ) as out:
            assert out.status == 204
        # At once: no worker, whichever served the logout, accepts the session any more.
        await asyncio.sleep(0.2)
        assert await statuses(service, token) == [401] * ROUNDS
        refused = await served(http, service, 401)
        assert min(refused) > 0, f"one worker was not asked after the logout: {refused}"

    began = time.monotonic()
    service.signal(signal.SIGTERM)
    assert await service.wait(15) == 0, service.log()
    assert time.monotonic() - began < 10
    log = service.log()
    assert not any(map(alive, pids))
    for index in (0, 1):
        assert len(re.findall(rf"authgate worker {index} stopped in ", log)) == 1, log
        stopped = rf"authgate worker {index} \(pid \d+\) stopped \(exit status 0\)"
        assert len(re.findall(stopped, log)) == 1, log
    assert "authgate stopped: 2 workers in" in log
    assert "Traceback" not in log


async def test_a_worker_that_dies_stops_the_service(two_workers: ServiceProcess) -> None:
    service = two_workers
    victim = service.children()[1]
    os.kill(victim, signal.SIGKILL)
    status = await service.wait(15)
    assert status != 0
    log = service.log()
    assert f"(pid {victim}) exited with status -9; stopping the others" in log
    assert "authgate stopped: 2 workers in" in log


def run_serve(config_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        authgate_command("serve", "--config", str(config_file), *args),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("overrides", "flag"),
    [({}, ["--workers", "2"]), ({"rest": {"workers": 2}}, [])],
)
def test_more_than_one_worker_on_sqlite_is_refused_in_one_line(
    tmp_path: Path, overrides: dict[str, Any], flag: list[str]
) -> None:
    config = service_config(
        tmp_path, None, database_url=f"sqlite:///{tmp_path / 'authgate.db'}", overrides=overrides
    )
    done = run_serve(write_config(tmp_path, config), *flag)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("authgate: 2 workers cannot serve this configuration: "), lines
    assert "database.url is sqlite" in lines[0]
    assert "ratelimit.storage is memory" in lines[0]
    assert "PostgreSQL" in lines[0] and "Redis" in lines[0]
    assert not (tmp_path / "session-keys.json").exists()  # refused before anything was made


async def test_sigterm_to_every_process_at_once_still_stops_gracefully(
    two_workers: ServiceProcess,
) -> None:
    """As systemd's default stop does (every process of the service's control group at once):
    the parent's forwarded signal must not turn each worker's graceful stop into a cut one."""
    service = two_workers
    for pid in (*service.children(), service.pid):
        os.kill(pid, signal.SIGTERM)
    assert await service.wait(15) == 0, service.log()
    log = service.log()
    for index in (0, 1):
        assert len(re.findall(rf"authgate worker {index} stopping \(SIGTERM\)", log)) == 1, log
        assert len(re.findall(rf"authgate worker {index} stopped in ", log)) == 1, log
    assert "stopping at once" not in log
    assert "killed" not in log


async def test_workers_stop_when_the_parent_is_killed(two_workers: ServiceProcess) -> None:
    """A killed parent must not leave workers holding the port, which a restarted service
    would then share with them."""
    service = two_workers
    workers = service.children()
    service.signal(signal.SIGKILL)
    await service.wait(15)
    await eventually(lambda: not any(map(alive_not_zombie, workers)), what="workers gone")


def alive_not_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
