"""A unit of work that changes something only while a session lives (a link that session
started) locks the session's record: a revocation running meanwhile waits for the unit to end,
and one that committed first is seen. A plain read would let a sign-out everywhere commit
between the check and the link."""

from __future__ import annotations

import asyncio
import datetime as dt

from authgate.adapters.postgres import PostgresStore, open_postgres
from tests.contract.test_session_records import record
from tests.support.records import T0


async def test_a_revocation_waits_for_the_unit_that_read_the_session_for_a_change(
    clean_postgres_url: str, asyncpg_pool: bool
) -> None:
    store = await open_postgres(clean_postgres_url, 1, 2, 5.0, asyncpg_pool=asyncpg_pool)
    try:
        await store.sessions.add(record("s-1", "acct-1"))
        now = T0 + dt.timedelta(minutes=1)
        async with store.units.begin() as tx:
            found = await tx.sessions.get("s-1", for_change=True)
            assert found is not None and found.live(now)
            revocation = asyncio.ensure_future(store.sessions.revoke("acct-1", "s-1", now))
            await asyncio.sleep(0.5)
            # the sign-out waits: the unit's change happens while the session still lives
            assert not revocation.done()
        assert await asyncio.wait_for(revocation, 5.0)
        again = await store.sessions.get("s-1")
        assert again is not None and not again.live(now)
    finally:
        await store.close()


async def test_a_unit_that_reads_after_a_committed_revocation_sees_it(
    clean_postgres_url: str, asyncpg_pool: bool
) -> None:
    store: PostgresStore = await open_postgres(
        clean_postgres_url, 1, 2, 5.0, asyncpg_pool=asyncpg_pool
    )
    try:
        await store.sessions.add(record("s-2", "acct-1"))
        now = T0 + dt.timedelta(minutes=1)
        assert await store.sessions.revoke("acct-1", "s-2", now)
        async with store.units.begin() as tx:
            found = await tx.sessions.get("s-2", for_change=True)
            assert found is not None and not found.live(now)
    finally:
        await store.close()
