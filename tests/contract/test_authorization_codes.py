"""The AuthorizationCodes contract, run against every adapter (fixture ``store``): a code is
redeemed once, by one of any number of concurrent redemptions, and a replay learns what the
first redemption issued."""

from __future__ import annotations

import asyncio

import pytest

from authgate.ports.openid import AlreadyUsed, Redeemed
from tests.support.oauth_records import code, family, grant, new_account
from tests.support.records import T0, at
from tests.support.stores import Store


class Boom(Exception):
    pass


async def test_the_first_redemption_gets_the_code_and_a_replay_its_family(store: Store) -> None:
    account = await new_account(store)
    issued = code(account)
    await store.authorization_codes.add(issued)
    assert await store.authorization_codes.redeem("code-1", at(1)) == Redeemed(issued)
    assert await store.authorization_codes.redeem("code-1", at(2)) == AlreadyUsed(issued, None)
    await store.authorization_codes.record_issued("code-1", "fam-1")
    assert await store.authorization_codes.redeem("code-1", at(3)) == AlreadyUsed(issued, "fam-1")
    # Replayed after it expired: still a replay while the code is kept.
    assert await store.authorization_codes.redeem("code-1", at(600)) == AlreadyUsed(issued, "fam-1")


async def test_every_field_round_trips(store: Store) -> None:
    account = await new_account(store)
    issued = code(account, nonce=None, scopes=(), redirect_uri="com.example.app:/cb")
    await store.authorization_codes.add(issued)
    redeemed = await store.authorization_codes.redeem("code-1", T0)
    assert isinstance(redeemed, Redeemed)
    assert redeemed.code == issued
    assert redeemed.code.scopes == ()


async def test_unknown_and_expired_codes_give_nothing(store: Store) -> None:
    account = await new_account(store)
    await store.authorization_codes.add(code(account))
    assert await store.authorization_codes.redeem("unknown", at(1)) is None
    assert await store.authorization_codes.redeem("code-1", at(60)) is None  # expiry exclusive
    # Expired unused: still nothing, and not marked used by the attempt.
    assert await store.authorization_codes.redeem("code-1", at(61)) is None


async def test_a_redemption_in_a_failed_unit_is_undone(store: Store) -> None:
    account = await new_account(store)
    issued = code(account)
    await store.authorization_codes.add(issued)
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            assert await tx.authorization_codes.redeem("code-1", at(1)) == Redeemed(issued)
            await tx.authorization_codes.record_issued("code-1", "fam-lost")
            raise Boom
    assert await store.authorization_codes.redeem("code-1", at(2)) == Redeemed(issued)


async def test_concurrent_redemptions_have_one_winner(store: Store) -> None:
    account = await new_account(store)
    await store.authorization_codes.add(code(account))
    results = await asyncio.gather(
        *(store.authorization_codes.redeem("code-1", at(1)) for _ in range(8))
    )
    assert sum(isinstance(r, Redeemed) for r in results) == 1
    assert sum(isinstance(r, AlreadyUsed) for r in results) == 7


async def test_concurrent_units_have_one_winner_and_the_others_learn_its_family(
    store: Store,
) -> None:
    """Each unit redeems and, when it won, records its family before committing (on
    PostgreSQL each unit is its own connection and transaction: the losers wait for the
    winner's row lock and then read what it committed)."""
    account = await new_account(store)
    await store.authorization_codes.add(code(account))

    async def redeem(n: int) -> Redeemed | AlreadyUsed | None:
        async with store.units.begin() as tx:
            result = await tx.authorization_codes.redeem("code-1", at(1))
            if isinstance(result, Redeemed):
                await asyncio.sleep(0.05)  # the others are blocked meanwhile
                await tx.authorization_codes.record_issued("code-1", f"fam-{n}")
            return result

    results = await asyncio.gather(*(redeem(n) for n in range(6)))
    winners = [n for n, r in enumerate(results) if isinstance(r, Redeemed)]
    assert len(winners) == 1
    losers = [r for r in results if not isinstance(r, Redeemed)]
    assert all(isinstance(r, AlreadyUsed) for r in losers)
    assert {r.family_id for r in losers if isinstance(r, AlreadyUsed)} == {f"fam-{winners[0]}"}


async def test_purge_drops_expired_codes_used_or_not(store: Store) -> None:
    account = await new_account(store)
    await store.authorization_codes.add(code(account, "used"))
    await store.authorization_codes.add(code(account, "unused"))
    await store.authorization_codes.add(
        code(account, "later", created_at=at(30), expires_at=at(90))
    )
    await store.authorization_codes.redeem("used", at(1))
    assert await store.authorization_codes.purge_expired(at(60)) == 2
    assert await store.authorization_codes.redeem("used", at(61)) is None  # forgotten
    assert isinstance(await store.authorization_codes.redeem("later", at(61)), Redeemed)
    assert await store.authorization_codes.purge_expired(at(60)) == 0


async def test_withdrawal_discards_the_outstanding_codes_of_one_account_and_client(
    store: Store,
) -> None:
    account = await new_account(store)
    other = await new_account(store, "someone-else")
    await store.authorization_codes.add(code(account, "open-1"))
    await store.authorization_codes.add(
        code(account, "open-2", created_at=at(30), expires_at=at(90))
    )
    await store.authorization_codes.add(code(account, "used"))
    await store.authorization_codes.add(code(account, "other-client", client_id="cli"))
    await store.authorization_codes.add(code(other, "other-account"))
    await store.authorization_codes.redeem("used", at(1))
    await store.authorization_codes.record_issued("used", "fam-used")

    assert await store.authorization_codes.discard_outstanding(account, "web") == 2
    # Spent: neither is ever redeemed.
    assert await store.authorization_codes.redeem("open-1", at(31)) is None
    assert await store.authorization_codes.redeem("open-2", at(31)) is None
    # A redeemed code stays: its replay still names what it issued.
    replay = await store.authorization_codes.redeem("used", at(32))
    assert isinstance(replay, AlreadyUsed) and replay.family_id == "fam-used"
    # Another client's, another account's: untouched.
    assert isinstance(await store.authorization_codes.redeem("other-client", at(33)), Redeemed)
    assert isinstance(await store.authorization_codes.redeem("other-account", at(33)), Redeemed)
    assert await store.authorization_codes.discard_outstanding(account, "web") == 0
    assert await store.authorization_codes.discard_outstanding("not-an-account", "web") == 0


async def test_codes_discarded_in_a_failed_unit_are_still_there(store: Store) -> None:
    account = await new_account(store)
    issued = code(account)
    await store.authorization_codes.add(issued)
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            assert await tx.authorization_codes.discard_outstanding(account, "web") == 1
            raise Boom
    assert await store.authorization_codes.redeem("code-1", at(1)) == Redeemed(issued)


async def test_a_withdrawal_racing_a_redemption_leaves_no_working_family(store: Store) -> None:
    """The withdrawal's unit (grant removed, outstanding codes discarded, the client's
    families revoked, in that order) against a redemption's unit (code redeemed, grant read,
    family started) that began first: the discard waits for the redemption (on PostgreSQL,
    its row lock, each unit its own transaction), so the revocation after it ends the family
    the redemption started; or the redemption comes second and finds no code. Either way no
    family of the client is left working."""
    account = await new_account(store)
    await store.grants.put(grant(account, "web", "openid", "email", "offline_access"))
    await store.authorization_codes.add(code(account))
    redeeming = asyncio.Event()

    async def redeem() -> str | None:
        async with store.units.begin() as tx:
            result = await tx.authorization_codes.redeem("code-1", at(1))
            redeeming.set()
            if not isinstance(result, Redeemed):
                return None
            await asyncio.sleep(0.1)  # the withdrawal runs meanwhile, where it may
            if await tx.grants.get(account, "web") is None:
                return None
            await tx.refresh_tokens.start_family(family(account, "fam-raced"))
            await tx.authorization_codes.record_issued("code-1", "fam-raced")
            return "fam-raced"

    async def withdraw() -> list[str]:
        await redeeming.wait()
        async with store.units.begin() as tx:
            await tx.grants.remove(account, "web")
            await tx.authorization_codes.discard_outstanding(account, "web")
            return await tx.refresh_tokens.revoke_for_client(account, "web", at(2))

    started, revoked = await asyncio.gather(redeem(), withdraw())
    assert not await store.refresh_tokens.is_family_live("fam-raced", at(3))
    if started is not None:
        assert revoked == [started]
    assert await store.grants.get(account, "web") is None
