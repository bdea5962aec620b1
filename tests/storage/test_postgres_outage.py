"""A PostgreSQL outage and recovery, on a throwaway cluster that the test stops and starts.

The cluster is this test's own (``initdb`` + ``pg_ctl`` on a free port, about 1.5 s), so it
runs whichever server the rest of the run uses; it skips where the binaries cannot run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from authgate.adapters.postgres import PostgresStore, migrate, open_postgres
from tests.support.postgres import ThrowawayCluster
from tests.support.records import T0, pending, verified

from .test_postgres import CONNECTION_ERRORS


async def _until_it_answers(store: PostgresStore, deadline: float = 10.0) -> int:
    """Retry ping until it succeeds; returns how many attempts failed first."""
    failures = 0
    start = time.monotonic()
    while True:
        try:
            await store.ping()
            return failures
        except CONNECTION_ERRORS:
            failures += 1
            if time.monotonic() - start > deadline:
                raise
            await asyncio.sleep(0.1)


async def _outage_and_recovery(cluster: ThrowawayCluster, url: str, asyncpg_pool: bool) -> None:
    store = await open_postgres(url, 2, 4, 2.0, ping_timeout=1.0, asyncpg_pool=asyncpg_pool)
    try:
        account, _ = await store.accounts.create_with_identity(verified(), T0)
        await store.ping()

        await asyncio.to_thread(cluster.stop, "fast")
        # During the outage every operation raises (the HTTP layer answers 500) and the
        # readiness check fails (503), each within its timeout.
        for operation in (
            store.ping(),
            store.accounts.get(account.id),
            store.states.put(pending("during-outage")),
            store.events.recent(),
        ):
            started = time.monotonic()
            with pytest.raises(CONNECTION_ERRORS):
                await operation
            # Bounded, not hung on the stopped server: the statement timeout is 2 s and the ping's
            # 1 s; the 3 s of margin are for a loaded machine.
            assert time.monotonic() - started < 5.0

        await asyncio.to_thread(cluster.start)
        # The same pool serves again: no restart, no new store.
        assert await _until_it_answers(store) <= 1
        assert await store.accounts.get(account.id) == account
        await store.states.put(pending("after-outage"))
        assert await store.states.take("google", "after-outage", "b" * 64, T0) is not None
    finally:
        await store.close()


async def test_the_pool_survives_a_server_restart(
    throwaway_cluster_factory: Callable[[], ThrowawayCluster], asyncpg_pool: bool
) -> None:
    cluster = await asyncio.to_thread(throwaway_cluster_factory)
    url = cluster.admin_url
    await migrate(url)
    await _outage_and_recovery(cluster, url, asyncpg_pool)


async def test_the_session_server_can_be_stopped_when_it_is_a_throwaway_cluster(
    postgres_control: ThrowawayCluster, postgres_url: str
) -> None:
    # Runs with AUTHGATE_TEST_PG=cluster; skipped when the run uses an existing server.
    await _outage_and_recovery(postgres_control, postgres_url, asyncpg_pool=False)
