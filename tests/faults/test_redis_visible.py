"""Redis, where it is configured (the rate limits' store, and the revocation channel with it),
is visible to an operator: readiness names it, ``authgate config check`` reaches it, and an
outage is one line in the log when it starts and one when it ends, with the revocation channel
retrying at a capped backoff rather than every second.

Readiness fails on Redis only when the limits fail closed (``ratelimit.fail_open: false``);
failing open, the service serves without Redis and readiness says ``degraded``.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness import ServiceProcess, authgate_command
from tests.fakeidp import FakeIdP
from tests.faults.test_redis_down import config
from tests.support.redis_server import RedisProcess


async def readiness(url: str) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{url}/health/readiness") as response,
    ):
        return response.status, await response.json()


async def wait_for_line(service: ServiceProcess, text: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while text not in (log := service.log()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not logged within {seconds} s:\n{log[-3000:]}")
        await asyncio.sleep(0.1)
    return log


async def test_readiness_names_redis_and_fails_open_as_degraded(
    tmp_path: Path, fake_idp: FakeIdP, redis: RedisProcess
) -> None:
    async with ServiceProcess(config(tmp_path, fake_idp, redis)) as service:
        status, body = await readiness(service.url)
        assert status == 200
        assert body["status"] == "ok"
        assert body["checks"]["redis"] == {"status": "ok"}

        redis.kill()
        status, body = await readiness(service.url)
        # the limits fail open: the service still serves, and says it runs degraded
        assert status == 200, body
        assert body["status"] == "degraded"
        assert body["checks"]["redis"] == {"status": "failed"}
        assert body["checks"]["database"] == {"status": "ok"}

        redis.start()
        status, body = await readiness(service.url)
        assert (status, body["status"], body["checks"]["redis"]) == (200, "ok", {"status": "ok"})


async def test_readiness_fails_on_redis_when_the_limits_fail_closed(
    tmp_path: Path, fake_idp: FakeIdP, redis: RedisProcess
) -> None:
    async with ServiceProcess(config(tmp_path, fake_idp, redis, fail_open=False)) as service:
        assert (await readiness(service.url))[0] == 200
        redis.kill()
        status, body = await readiness(service.url)
        assert status == 503, body
        assert body["status"] == "unavailable"
        assert body["checks"]["redis"] == {"status": "failed"}


async def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends(
    tmp_path: Path, fake_idp: FakeIdP, redis: RedisProcess
) -> None:
    async with ServiceProcess(config(tmp_path, fake_idp, redis)) as service:
        await readiness(service.url)
        redis.kill()
        await wait_for_line(service, "session revocation channel (Redis) lost", 15)
        # probes keep coming and the channel keeps retrying while Redis is down
        for _ in range(8):
            await readiness(service.url)
            await asyncio.sleep(0.5)
        log = service.log()
        assert log.count("session revocation channel (Redis) lost") == 1, log[-3000:]
        assert log.count("health check redis failed") == 1, log[-3000:]

        redis.start()
        log = await wait_for_line(service, "session revocation channel (Redis) back", 40)
        await readiness(service.url)
        log = await wait_for_line(service, "health check redis passes again", 5)
        assert log.count("session revocation channel (Redis) back") == 1
        assert log.count("health check redis passes again") == 1
        assert "Traceback" not in log


def check(config_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        authgate_command("config", "check", "--config", str(config_file)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_config_check_reaches_redis_and_names_it_when_it_cannot(
    tmp_path: Path, fake_idp: FakeIdP, redis: RedisProcess
) -> None:
    config_file = config(tmp_path, fake_idp, redis)
    reached = check(config_file)
    assert f"redis: ok ({redis.url})" in reached.stdout.splitlines(), reached.stdout

    redis.kill()
    failed = check(config_file)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    line = next(x for x in failed.stdout.splitlines() if x.startswith("redis: "))
    assert line.startswith(f"redis: FAILED {redis.url} does not answer ("), line
