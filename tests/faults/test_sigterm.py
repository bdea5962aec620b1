"""SIGTERM while sign-ins are in flight (the provider's token endpoint is slow).

The in-flight callbacks complete (session cookie, 302 to the application, account written),
the listener closes at once so that no new sign-in is accepted, and ``authgate serve`` exits 0.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
from pathlib import Path

from bench.harness import ServiceProcess, SignInDriver, service_config, write_config
from tests.fakeidp import FakeIdP, FakeUser, TokenMode
from tests.support.waiting import eventually

IN_FLIGHT = 6
PROVIDER_TIMEOUT = 30  # providers.google.timeout_seconds: far beyond the test's own steps


async def refuses_connections(port: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except ConnectionRefusedError:
            return True
        except ConnectionResetError:
            continue
        writer.close()
        await asyncio.sleep(0.02)
    return False


async def test_in_flight_sign_ins_complete_and_new_ones_are_refused(
    tmp_path: Path, fake_idp: FakeIdP
) -> None:
    db = tmp_path / "authgate.db"
    config = service_config(
        tmp_path,
        fake_idp,
        database_url=f"sqlite:///{db}",
        overrides={"providers": {"google": {"timeout_seconds": PROVIDER_TIMEOUT}}},
    )
    service = ServiceProcess(write_config(tmp_path, config))
    async with service, SignInDriver(fake_idp) as driver:
        pending = []
        for i in range(IN_FLIGHT):
            details, binding = await driver.begin(service.url, "google", intent="register")
            back = await fake_idp.authorize(
                details["authorizationUrl"], user=FakeUser(sub=f"term-{i}")
            )
            pending.append((back, binding))
        # The token endpoint holds its answers until the test releases them (not a fixed
        # delay, which a loaded machine could outlast before the checks below).
        release = fake_idp.google.token_release = asyncio.Event()
        fake_idp.google.token_mode = TokenMode.SLOW
        fake_idp.google.slow_seconds = 2 * PROVIDER_TIMEOUT
        callbacks = [
            asyncio.ensure_future(
                driver.callback(service.url, "google", back.params, binding=binding)
            )
            for back, binding in pending
        ]
        await eventually(
            lambda: fake_idp.google.hits["token"] >= IN_FLIGHT,
            what="every callback waiting on the provider's token endpoint",
        )

        service.signal(signal.SIGTERM)
        assert await refuses_connections(service.port)
        assert not any(c.done() for c in callbacks)

        release.set()
        async with asyncio.timeout(PROVIDER_TIMEOUT):
            results = await asyncio.gather(*callbacks)
        assert all(r.signed_in for r in results), results
        assert await service.wait(15) == 0

    with sqlite3.connect(db) as conn:
        subjects = {s for (s,) in conn.execute("SELECT subject FROM identities")}
    assert subjects == {f"term-{i}" for i in range(IN_FLIGHT)}
    assert "Traceback" not in service.log()
