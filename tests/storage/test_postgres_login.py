"""A login on PostgreSQL is one statement: the look-up and the writes for the account holding
the identity (adapters/postgres/login.py). Counted on the pool's only connection with
asyncpg's query logger, as tests/storage/test_postgres_unit.py counts a unit's statements."""

from __future__ import annotations

import asyncio

import pytest

from authgate.adapters.postgres import PostgresStore
from tests.contract.test_sign_in_to_holder import writes
from tests.support.records import T0, at, verified


@pytest.mark.parametrize("sealed", [False, True])
async def test_a_login_is_one_statement(pg: PostgresStore, sent: list[str], sealed: bool) -> None:
    who = verified(subject="one-statement")
    account, _ = await pg.accounts.create_with_identity(who, T0)
    await asyncio.sleep(0)  # asyncpg calls query loggers soon after a statement, not in it
    sent.clear()
    async with pg.units.begin() as tx:
        found = await tx.sign_in_to_holder(
            who.identity, at(5), writes("s-1", who.identity, sealed=sealed)
        )
    await asyncio.sleep(0)
    assert found is not None and found[1].id == account.id
    assert len(sent) == 1, sent
    assert sent[0].startswith("WITH found AS (")
    assert ("INSERT INTO provider_tokens" in sent[0]) is sealed
    assert await pg.sessions.get("s-1") is not None


async def test_nothing_may_follow_it_in_its_unit(pg: PostgresStore) -> None:
    # It commits by itself: a later statement could not be rolled back with it, so the unit
    # refuses one (the sign-in service writes nothing after it).
    who = verified(subject="last-write")
    account, _ = await pg.accounts.create_with_identity(who, T0)
    with pytest.raises(RuntimeError, match="after its statement_alone"):
        async with pg.units.begin() as tx:
            await tx.sign_in_to_holder(who.identity, at(5), writes("s-2", who.identity))
            await tx.accounts.record_login(account.id, at(6))
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at == at(5)


async def test_after_another_statement_it_goes_through_the_repositories(
    pg: PostgresStore, sent: list[str]
) -> None:
    # Not the unit's first: the look-up and the unit's waiting writes, as any unit.
    who = verified(subject="second")
    other = verified(subject="other")
    account, _ = await pg.accounts.create_with_identity(who, T0)
    await asyncio.sleep(0)
    sent.clear()
    async with pg.units.begin() as tx:
        await tx.accounts.find_with_identity(other.identity)
        await tx.accounts.record_login(account.id, at(4))
        found = await tx.sign_in_to_holder(who.identity, at(5), writes("s-3", who.identity))
    await asyncio.sleep(0)
    assert found is not None
    assert not any(s.startswith("WITH found AS (") for s in sent), sent
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at == at(5)
    assert await pg.sessions.get("s-3") is not None
