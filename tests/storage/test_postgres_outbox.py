"""The revocation outbox's claim on the real PostgreSQL: bounded by its limit whatever plan the
planner picks.

Whether a claim statement re-runs its locking sub-select depends on the plan, and the plan on
the table's statistics, which autovacuum changes behind a test's back: with statistics saying
the table holds about one row, the planner scans the table first and re-runs the sub-select
for each of its rows (a nested loop without a materialised inner side). Each re-run skips the
rows the statement has already updated and locks the next ones, so a claim of 2 leased all 5
due rows. The test puts the table in each statistics state on purpose, then claims in rounds
with several concurrent claimers, checking every claim and the table after every round.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator

import asyncpg
import pytest

from authgate.adapters.postgres import PostgresStore, open_postgres
from authgate.domain.model import PendingRevocation, ProviderIdentity, SealedToken
from tests.support.records import T0, at

LEASE = dt.timedelta(minutes=10)
DUE = 40  # rows due at once (they fit one 8 kB page, as the statistics below assume)
LIMIT = 3
CLAIMERS = 4
ROUNDS = 8


def _pending(i: int) -> PendingRevocation:
    return PendingRevocation(
        id=f"r-{i:03d}",
        account_id="acct-1",
        identity=ProviderIdentity("apple", "s-apple"),
        sealed=SealedToken("k1", "sealed"),
        created_at=T0,
        next_attempt_at=at(i % 7),
    )


async def _give_statistics(url: str, rows: int) -> None:
    """Leave the outbox empty, with the statistics of a table of ``rows`` rows (as autovacuum
    leaves them after earlier work): VACUUM ANALYZE with that many rows, then delete them."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DELETE FROM provider_token_revocations")
        await conn.execute(
            """
            INSERT INTO provider_token_revocations (id, account_id, provider, subject, key_id,
                ciphertext, created_at, next_attempt_at)
            SELECT 'old-' || i, 'a', 'apple', 's', 'k1', 'c', $1, $1
            FROM generate_series(1, $2) AS i
            """,
            T0,
            rows,
        )
        await conn.execute("VACUUM ANALYZE provider_token_revocations")
        await conn.execute("DELETE FROM provider_token_revocations")
    finally:
        await conn.close()


@pytest.fixture
async def pg(clean_postgres_url: str, asyncpg_pool: bool) -> AsyncIterator[PostgresStore]:
    store = await open_postgres(
        clean_postgres_url, CLAIMERS, CLAIMERS, 5.0, asyncpg_pool=asyncpg_pool
    )
    try:
        yield store
    finally:
        await store.close()


@pytest.mark.parametrize("analyzed_rows", [1, 0, 5, 2000])
async def test_concurrent_claims_never_lease_more_than_their_limit_whatever_the_statistics(
    pg: PostgresStore, clean_postgres_url: str, analyzed_rows: int
) -> None:
    await _give_statistics(clean_postgres_url, analyzed_rows)
    for i in range(DUE):
        await pg.revocations.add(_pending(i))
    claimed: list[str] = []
    for _ in range(ROUNDS):
        batches = await asyncio.gather(
            *(pg.revocations.claim(at(10), LEASE, LIMIT) for _ in range(CLAIMERS))
        )
        assert all(len(batch) <= LIMIT for batch in batches), [len(b) for b in batches]
        claimed += [p.id for batch in batches for p in batch]
        # Every leased row was handed to a claimer, once: nothing leased behind their back.
        leased = await pg.pool.fetch(
            "SELECT id FROM provider_token_revocations WHERE leased_until IS NOT NULL"
        )
        assert sorted(r["id"] for r in leased) == sorted(claimed)
        assert len(claimed) == len(set(claimed))
    # The rounds could claim at most ROUNDS * CLAIMERS * LIMIT rows; the earliest due first.
    assert len(claimed) == min(DUE, ROUNDS * CLAIMERS * LIMIT)
