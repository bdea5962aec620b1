"""The LogoutOutbox contract, run against every adapter (fixture ``store``), and its place in
the unit of work."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from authgate.domain.openid.logout import PendingLogout
from tests.support.records import T0, at, verified
from tests.support.stores import Store

LEASE = dt.timedelta(seconds=60)


def logout(rid: str, due: dt.datetime = T0, account: str = "acct-1") -> PendingLogout:
    return PendingLogout(
        id=rid,
        client_id="webapp",
        account_id=account,
        session_id=f"sid-{rid}",
        created_at=T0,
        next_attempt_at=due,
    )


async def test_a_row_reads_back_as_written(store: Store) -> None:
    await store.logout_outbox.add(logout("l-1", due=at(3)))
    assert await store.logout_outbox.pending() == [logout("l-1", due=at(3))]


async def test_claim_leases_due_rows_oldest_due_first(store: Store) -> None:
    await store.logout_outbox.add(logout("late", due=at(10)))
    await store.logout_outbox.add(logout("b", due=at(2)))
    await store.logout_outbox.add(logout("a", due=at(1)))
    claimed = await store.logout_outbox.claim(at(5), LEASE, 10)
    assert claimed == [logout("a", due=at(1)), logout("b", due=at(2))]
    # Leased: not claimed again until the lease runs out (a worker that died).
    assert await store.logout_outbox.claim(at(6), LEASE, 10) == []
    again = await store.logout_outbox.claim(at(5) + LEASE, LEASE, 10)
    assert [p.id for p in again] == ["a", "b", "late"]


async def test_due_says_whether_a_claim_would_find_a_row(store: Store) -> None:
    outbox = store.logout_outbox
    assert not await outbox.due(at(5))  # empty
    await outbox.add(logout("l-1", due=at(3)))
    assert not await outbox.due(at(2))  # not due yet
    assert await outbox.due(at(3))
    [claimed] = await outbox.claim(at(3), LEASE, 10)
    assert not await outbox.due(at(4))  # leased
    assert await outbox.due(at(3) + LEASE)  # its lease ran out
    await outbox.retry(claimed.id, 1, at(30), "HTTP 503")
    assert not await outbox.due(at(29))
    assert await outbox.due(at(30))
    await outbox.complete("l-1")
    assert not await outbox.due(at(99))
    assert await outbox.pending() == []  # looking changed nothing


async def test_claim_respects_the_limit(store: Store) -> None:
    for i in range(5):
        await store.logout_outbox.add(logout(f"l-{i}", due=at(i)))
    assert [p.id for p in await store.logout_outbox.claim(at(9), LEASE, 2)] == ["l-0", "l-1"]
    assert [p.id for p in await store.logout_outbox.claim(at(9), LEASE, 2)] == ["l-2", "l-3"]
    assert [p.id for p in await store.logout_outbox.claim(at(9), LEASE, 2)] == ["l-4"]


async def test_retry_unleases_and_reschedules_and_complete_removes(store: Store) -> None:
    await store.logout_outbox.add(logout("l-1"))
    [claimed] = await store.logout_outbox.claim(at(1), LEASE, 10)
    await store.logout_outbox.retry(claimed.id, 1, at(30), "HTTP 503")
    assert await store.logout_outbox.claim(at(29), LEASE, 10) == []
    [due] = await store.logout_outbox.claim(at(30), LEASE, 10)
    assert (due.attempts, due.next_attempt_at) == (1, at(30))
    await store.logout_outbox.complete("l-1")
    assert await store.logout_outbox.pending() == []


async def test_concurrent_claims_never_share_a_row(store: Store) -> None:
    for i in range(20):
        await store.logout_outbox.add(logout(f"l-{i:02d}"))
    batches = await asyncio.gather(*(store.logout_outbox.claim(at(1), LEASE, 3) for _ in range(10)))
    assert all(len(batch) <= 3 for batch in batches)
    ids = [p.id for batch in batches for p in batch]
    assert len(ids) == len(set(ids)) == 20


async def test_rows_are_written_and_rolled_back_with_the_unit(store: Store) -> None:
    with pytest.raises(RuntimeError):
        async with store.units.begin() as tx:
            await tx.logout_outbox.add(logout("rolled-back"))
            raise RuntimeError("the session did not end")
    async with store.units.begin() as tx:
        await tx.logout_outbox.add(logout("kept"))
    assert [p.id for p in await store.logout_outbox.pending()] == ["kept"]


async def test_a_row_outlives_the_account_it_names(store: Store) -> None:
    """Written in the unit that deletes the account: the client must still be told."""
    account, _ = await store.accounts.create_with_identity(verified("google", "s-1"), T0)
    async with store.units.begin() as tx:
        await tx.logout_outbox.add(logout("l-1", account=account.id))
        assert await tx.accounts.delete(account.id)
    assert [p.account_id for p in await store.logout_outbox.pending()] == [account.id]
