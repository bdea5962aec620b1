"""The ProviderTokenStore and RevocationOutbox contracts, run against every adapter (fixture
``store``), and their place in the unit of work."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from authgate.domain.model import (
    PendingRevocation,
    ProviderIdentity,
    SealedToken,
    StoredProviderToken,
)
from tests.support.records import T0, at, verified
from tests.support.stores import MemoryStore, Store

LEASE = dt.timedelta(seconds=60)


async def account_with(store: Store, *providers: str) -> str:
    """An account holding an identity at each provider (subject ``s-{provider}``)."""
    account, _ = await store.accounts.create_with_identity(
        verified(providers[0], f"s-{providers[0]}"), T0
    )
    for provider in providers[1:]:
        await store.accounts.link_identity(account.id, verified(provider, f"s-{provider}"), T0)
    return account.id


def stored(account_id: str, provider: str, key: str = "k1", text: str = "c") -> StoredProviderToken:
    return StoredProviderToken(
        account_id, ProviderIdentity(provider, f"s-{provider}"), SealedToken(key, text), T0
    )


def pending(rid: str, due: dt.datetime = T0, account: str = "acct-1") -> PendingRevocation:
    return PendingRevocation(
        id=rid,
        account_id=account,
        identity=ProviderIdentity("apple", "s-apple"),
        sealed=SealedToken("k1", f"sealed-{rid}"),
        created_at=T0,
        next_attempt_at=due,
    )


async def test_put_replaces_per_account_and_provider_and_take_removes(store: Store) -> None:
    account = await account_with(store, "google", "apple")
    await store.provider_tokens.put(stored(account, "google", text="one"))
    await store.provider_tokens.put(stored(account, "apple", text="two"))
    await store.provider_tokens.put(stored(account, "google", key="k2", text="three"))
    kept = await store.provider_tokens.for_account(account)
    assert [(t.identity.provider, t.sealed) for t in kept] == [
        ("apple", SealedToken("k1", "two")),
        ("google", SealedToken("k2", "three")),
    ]
    assert kept[0].updated_at == T0
    taken = await store.provider_tokens.take(account, "google")
    assert [t.sealed.ciphertext for t in taken] == ["three"]
    assert await store.provider_tokens.take(account, "google") == []
    rest = await store.provider_tokens.take(account)
    assert [t.identity.provider for t in rest] == ["apple"]
    assert await store.provider_tokens.for_account(account) == []


async def test_rekeying_finds_other_keys_and_does_not_overwrite_a_newer_token(
    store: Store,
) -> None:
    account = await account_with(store, "google", "apple")
    await store.provider_tokens.put(stored(account, "google", key="old"))
    await store.provider_tokens.put(stored(account, "apple", key="new"))
    found = await store.provider_tokens.sealed_under_other_keys("new", 10)
    assert [t.identity.provider for t in found] == ["google"]
    resealed = stored(account, "google", key="new", text="resealed")
    assert await store.provider_tokens.replace_sealed(resealed, "old")
    assert not await store.provider_tokens.replace_sealed(resealed, "old")  # done already
    assert await store.provider_tokens.sealed_under_other_keys("new", 10) == []


async def test_a_unit_that_fails_rolls_the_token_move_back(store: Store) -> None:
    account = await account_with(store, "google", "apple")
    await store.provider_tokens.put(stored(account, "apple"))
    with pytest.raises(RuntimeError):
        async with store.units.begin() as tx:
            for t in await tx.provider_tokens.take(account, "apple"):
                await tx.revocations.add(pending("r-1", account=t.account_id))
            raise RuntimeError("the unlink failed")
    assert len(await store.provider_tokens.for_account(account)) == 1
    assert await store.revocations.pending() == []


async def test_claim_leases_due_rows_oldest_first(store: Store) -> None:
    await store.revocations.add(pending("late", due=at(10)))
    await store.revocations.add(pending("b", due=at(2)))
    await store.revocations.add(pending("a", due=at(1)))
    claimed = await store.revocations.claim(at(5), LEASE, 10)
    assert [p.id for p in claimed] == ["a", "b"]
    assert claimed[0].sealed == SealedToken("k1", "sealed-a")
    assert claimed[0].identity == ProviderIdentity("apple", "s-apple")
    assert claimed[0].created_at == T0 and claimed[0].attempts == 0
    # Leased: not claimed again until the lease runs out (a worker that died).
    assert await store.revocations.claim(at(6), LEASE, 10) == []
    again = await store.revocations.claim(at(5) + LEASE, LEASE, 10)
    assert [p.id for p in again] == ["a", "b", "late"]


async def test_due_says_whether_a_claim_would_find_a_revocation(store: Store) -> None:
    outbox = store.revocations
    assert not await outbox.due(at(5))
    await outbox.add(pending("r-1", due=at(3)))
    assert not await outbox.due(at(2))
    assert await outbox.due(at(3))
    await outbox.claim(at(3), LEASE, 10)
    assert not await outbox.due(at(4))  # leased
    assert await outbox.due(at(3) + LEASE)
    await outbox.complete("r-1")
    assert not await outbox.due(at(99))


async def test_claim_respects_the_limit(store: Store) -> None:
    for i in range(5):
        await store.revocations.add(pending(f"r-{i}", due=at(i)))
    assert [p.id for p in await store.revocations.claim(at(9), LEASE, 2)] == ["r-0", "r-1"]
    assert [p.id for p in await store.revocations.claim(at(9), LEASE, 2)] == ["r-2", "r-3"]
    assert [p.id for p in await store.revocations.claim(at(9), LEASE, 2)] == ["r-4"]


async def test_retry_unleases_and_reschedules_and_complete_removes(store: Store) -> None:
    await store.revocations.add(pending("r-1"))
    [claimed] = await store.revocations.claim(at(1), LEASE, 10)
    await store.revocations.retry(claimed.id, 1, at(30), "HTTP 503")
    assert await store.revocations.claim(at(29), LEASE, 10) == []
    [due] = await store.revocations.claim(at(30), LEASE, 10)
    assert (due.attempts, due.next_attempt_at) == (1, at(30))
    await store.revocations.complete("r-1")
    assert await store.revocations.pending() == []


async def test_concurrent_claims_never_share_a_row(store: Store) -> None:
    for i in range(20):
        await store.revocations.add(pending(f"r-{i:02d}"))
    batches = await asyncio.gather(*(store.revocations.claim(at(1), LEASE, 3) for _ in range(10)))
    assert all(len(batch) <= 3 for batch in batches)
    ids = [p.id for batch in batches for p in batch]
    assert len(ids) == len(set(ids)) == 20


async def test_sql_stores_drop_a_token_with_its_identity(store: Store) -> None:
    """A safety net behind the services (which move the token out first): a token never
    outlives the identity it was issued for, whatever removed the identity."""
    if isinstance(store, MemoryStore):
        pytest.skip("the memory store has no foreign keys")
    account = await account_with(store, "google", "apple")
    await store.provider_tokens.put(stored(account, "google"))
    await store.provider_tokens.put(stored(account, "apple"))
    assert await store.accounts.unlink_identity(account, "apple")
    assert [t.identity.provider for t in await store.provider_tokens.for_account(account)] == [
        "google"
    ]
    assert await store.accounts.delete(account)
    assert await store.provider_tokens.for_account(account) == []
