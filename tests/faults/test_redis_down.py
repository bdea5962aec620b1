"""Redis, the store of the callback rate limit, dies under a real ``authgate serve``.

Documented behaviour (docs/security.md, "Rate limits"; docs/resilience.md): the limiter fails
open by default (``ratelimit.fail_open: true``): callbacks are still served, each within the Redis
client's timeouts, and one error line per 10 s says so in the log; with
``ratelimit.fail_open: false`` a callback (and a sign-in start: the initiation limit is in the
same store) is answered 429 ``rate_limited`` instead. When Redis
comes back the limit holds again, without restarting the service.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from bench.harness import (
    ServiceProcess,
    SignInDriver,
    SignInError,
    service_config,
    write_config,
)
from tests.fakeidp import FakeIdP, FakeUser
from tests.support.redis_server import RedisProcess
from tests.support.waiting import eventually

LIMIT = 10  # the default: 10 callbacks per minute per client address


def config(tmp_path: Path, fake: FakeIdP, redis: RedisProcess, **ratelimit: Any) -> Path:
    return write_config(
        tmp_path,
        service_config(
            tmp_path,
            fake,
            database_url=f"sqlite:///{tmp_path / 'authgate.db'}",
            ratelimit_storage=redis.url,
            overrides={"ratelimit": {"trusted_proxies": ["127.0.0.1/32"], **ratelimit}},
        ),
    )


async def test_fails_open_logs_and_recovers(
    tmp_path: Path, fake_idp: FakeIdP, redis: RedisProcess
) -> None:
    async with (
        ServiceProcess(config(tmp_path, fake_idp, redis)) as service,
        SignInDriver(fake_idp) as driver,
    ):
        client = {"X-Forwarded-For": "198.51.100.7"}
        ok = await driver.complete(
            service.url, user=FakeUser(sub="r-0"), intent="register", headers=client
        )
        assert ok.signed_in

        redis.kill()
        for i in range(1, LIMIT + 5):  # past the limit: it is not enforced while Redis is down
            started = time.monotonic()
            result = await driver.complete(
                service.url, user=FakeUser(sub=f"r-{i}"), intent="register", headers=client
            )
            assert result.signed_in, result
            # Bounded, not hung on the dead store: each limiter call gives up after the Redis
            # client's 0.5 s timeouts. Generous (a sign-in is three requests on a loaded
            # machine); a client without timeouts would wait far longer.
            assert time.monotonic() - started < 10.0
        # The service writes its log from a listener thread: the line may follow the answer.
        await eventually(lambda: "failing open" in service.log(), what="the fail-open line")
        log = service.log()
        assert "rate-limit store unreachable" in log
        assert log.count("rate-limit store unreachable") <= 2  # not one line per request
        assert "Traceback" not in log

        redis.start()  # empty: the counters start again
        other = {"X-Forwarded-For": "198.51.100.8"}
        statuses = []
        for i in range(LIMIT + 2):
            result = await driver.callback(
                service.url, "google", {"code": "x", "state": f"s{i}"}, binding=None, headers=other
            )
            statuses.append(result.status)
        assert statuses == [401] * LIMIT + [429, 429]  # the limit holds again


async def test_fail_closed_answers_429(
    tmp_path: Path, fake_idp: FakeIdP, redis: RedisProcess
) -> None:
    async with (
        ServiceProcess(config(tmp_path, fake_idp, redis, fail_open=False)) as service,
        SignInDriver(fake_idp) as driver,
    ):
        client = {"X-Forwarded-For": "198.51.100.9"}
        first = await driver.complete(
            service.url, user=FakeUser(sub="c-0"), intent="register", headers=client
        )
        assert first.signed_in
        details, binding = await driver.begin(service.url, "google", intent="register")
        redis.kill()
        with pytest.raises(SignInError, match=r'initiation answered 429: .*"rate_limited"'):
            await driver.begin(service.url, "google", intent="register")
        back = await fake_idp.authorize(details["authorizationUrl"], user=FakeUser(sub="c-1"))
        result = await driver.callback(
            service.url, "google", back.params, binding=binding, headers=client
        )
        assert result.status == 429, result
        assert '"rate_limited"' in result.body
        await eventually(lambda: "failing closed" in service.log(), what="the fail-closed line")
