"""The UnitOfWork contract, run against every adapter (fixture ``store``): the writes of a
block commit together when it ends normally and not at all when it raises."""

from __future__ import annotations

import asyncio

import pytest

from authgate.domain.model import Outcome
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
    async def sign_up(i: int) -> tuple[str, bool]:
        async with store.units.begin() as tx:
            account, created = await tx.accounts.create_with_identity(
                verified(subject="contested"), at(i)
            )
            await tx.events.record(event(i, Outcome.REGISTERED, account_id=account.id))
            return account.id, created

    results = await asyncio.gather(*(sign_up(i) for i in range(20)))
    assert len({account_id for account_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert len(await store.events.recent()) == 20
