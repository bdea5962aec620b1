"""The UnitOfWork contract, run against every adapter (fixture ``store``): the writes of a
block commit together when it ends normally and not at all when it raises."""

from __future__ import annotations

import asyncio

import pytest

from authgate.domain.model import Outcome
from authgate.ports.accounts import IdentityRace
from tests.support.records import T0, at, event, verified
from tests.support.stores import Store


class Boom(Exception):
    pass


async def test_writes_of_a_unit_commit_together(store: Store) -> None:
    async with store.units.begin() as tx:
        account, created = await tx.accounts.create_with_identity(verified(subject="u-1"), T0)
        await tx.accounts.record_login(account.id, at(1))
        await tx.events.record(event(1, Outcome.REGISTERED, account_id=account.id))
    assert created
    stored = await store.accounts.get(account.id)
    assert stored is not None and stored.last_login_at == at(1)
    [recorded] = await store.events.recent()
    assert recorded.account_id == account.id


async def test_a_failure_half_way_leaves_nothing(store: Store) -> None:
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            account, _ = await tx.accounts.create_with_identity(verified(subject="u-2"), T0)
            await tx.accounts.record_login(account.id, at(1))
            await tx.events.record(event(1, Outcome.REGISTERED, account_id=account.id))
            raise Boom
    assert await store.accounts.get(account.id) is None
    assert await store.accounts.find_by_identity(verified(subject="u-2").identity) is None
    assert await store.events.recent() == []


async def test_a_failed_link_rolls_back_with_the_rest_of_the_unit(store: Store) -> None:
    owner, _ = await store.accounts.create_with_identity(verified(subject="owner"), T0)
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            await tx.accounts.link_identity(owner.id, verified("facebook", "fb-9"), at(1))
            await tx.accounts.record_login(owner.id, at(2))
            raise Boom
    assert [i.identity.provider for i in await store.accounts.list_identities(owner.id)] == [
        "google"
    ]
    stored = await store.accounts.get(owner.id)
    assert stored is not None and stored.last_login_at is None


async def test_writes_outside_a_failed_unit_stay(store: Store) -> None:
    before, _ = await store.accounts.create_with_identity(verified(subject="before"), T0)
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            await tx.accounts.create_with_identity(verified(subject="inside"), T0)
            raise Boom
    assert await store.accounts.get(before.id) is not None


async def test_concurrent_units_creating_one_identity_make_one_account(store: Store) -> None:
    # As a sign-in does it: look the identity up, create it when nobody holds it, run the
    # unit again when a concurrent one created it first (IdentityRace: this one wrote nothing).
    races = 0

    async def sign_up(i: int) -> tuple[str, bool]:
        nonlocal races
        for _ in range(3):
            try:
                async with store.units.begin() as tx:
                    v = verified(subject="contested")
                    found = await tx.accounts.find_with_identity(v.identity)
                    if found is not None:
                        account, created = found[1], False
                    else:
                        account, created = await tx.accounts.create_with_identity(v, at(i))
                    await tx.accounts.record_login(account.id, at(i))
                    await tx.events.record(event(i, Outcome.REGISTERED, account_id=account.id))
                    return account.id, created
            except IdentityRace:
                races += 1
        raise AssertionError("a unit lost the race three times")

    results = await asyncio.gather(*(sign_up(i) for i in range(20)))
    assert len({account_id for account_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    # the losers' units wrote nothing: one event per sign-up, one account, one identity
    assert len(await store.events.recent()) == 20
    [account_id] = {account_id for account_id, _ in results}
    assert len(await store.accounts.list_identities(account_id)) == 1
    assert await store.accounts.get(account_id) is not None


async def test_an_account_created_in_a_unit_has_its_last_sign_in(store: Store) -> None:
    v = verified(subject="fresh")
    async with store.units.begin() as tx:
        assert await tx.accounts.find_with_identity(v.identity) is None
        account, created = await tx.accounts.create_with_identity(v, T0)
        await tx.accounts.record_login(account.id, at(5))
        await tx.events.record(event(5, Outcome.REGISTERED, account_id=account.id))
    assert created
    stored = await store.accounts.get(account.id)
    assert stored == account.__class__(
        id=account.id,
        email=account.email,
        name=account.name,
        created_at=T0,
        last_login_at=at(5),
        email_verified=account.email_verified,
    )
    found = await store.accounts.find_with_identity(v.identity)
    assert found is not None and found[0].is_primary and found[1] == stored


async def test_a_unit_creating_a_taken_identity_writes_nothing(store: Store) -> None:
    holder, _ = await store.accounts.create_with_identity(verified(subject="held"), T0)
    try:
        async with store.units.begin() as tx:
            account, created = await tx.accounts.create_with_identity(
                verified(subject="held"), at(1)
            )
            await tx.events.record(event(1, Outcome.REGISTERED, account_id=account.id))
    except IdentityRace:  # an adapter that creates with the unit's writes
        assert await store.events.recent() == []
    else:  # an adapter that creates at once returns the holder
        assert (account.id, created) == (holder.id, False)
    assert [i.account_id for i in await store.accounts.list_identities(holder.id)] == [holder.id]


async def test_a_failure_among_many_rows_puts_back_exactly_what_it_wrote(store: Store) -> None:
    accounts = [
        (await store.accounts.create_with_identity(verified(subject=f"many-{n}"), T0))[0]
        for n in range(200)
    ]
    await store.accounts.record_login(accounts[7].id, at(1))
    before = [await store.accounts.get(a.id) for a in accounts]
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            await tx.accounts.record_login(accounts[7].id, at(9))
            await tx.accounts.delete(accounts[8].id)
            await tx.accounts.link_identity(accounts[9].id, verified("apple", "many-9"), at(9))
            await tx.accounts.create_with_identity(verified(subject="many-new"), at(9))
            await tx.events.record(event(9, Outcome.REGISTERED, account_id=accounts[9].id))
            raise Boom
    assert [await store.accounts.get(a.id) for a in accounts] == before
    assert before[7] is not None and before[7].last_login_at == at(1)
    assert [i.identity.provider for i in await store.accounts.list_identities(accounts[9].id)] == [
        "google"
    ]
    assert await store.accounts.find_by_identity(verified(subject="many-new").identity) is None
    assert await store.events.recent() == []
