"""The RefreshTokens contract, run against every adapter (fixture ``store``): families,
rotation with reuse detection (RFC 9700 section 4.14) under concurrency, and revocation."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3

import asyncpg
import attrs
import pytest

from authgate.ports.openid import Reused, Rotated
from tests.support.oauth_records import DAY, family, new_account, refresh
from tests.support.records import T0, at
from tests.support.stores import Store


class Boom(Exception):
    pass


async def started(store: Store, account: str, family_id: str = "fam-1", **kw: object) -> str:
    """A family with its first refresh token ``rt-{family_id}``; that token's digest."""
    first = f"rt-{family_id}"
    await store.refresh_tokens.start_family(
        family(account, family_id, **kw), refresh(account, first, family_id, **kw)
    )
    return first


async def test_a_family_with_its_first_token_round_trips(store: Store) -> None:
    account = await new_account(store)
    first = refresh(account, "rt-1", scopes=())
    await store.refresh_tokens.start_family(family(account), first)
    assert await store.refresh_tokens.get("rt-1") == first
    assert await store.refresh_tokens.get("unknown") is None
    # The family's expiry covers its token's.
    assert await store.refresh_tokens.for_account(account) == [
        family(account, expires_at=first.expires_at)
    ]
    assert await store.refresh_tokens.is_family_live("fam-1", first.expires_at - DAY)
    assert not await store.refresh_tokens.is_family_live("fam-1", first.expires_at)


async def test_a_first_token_of_other_owners_is_refused(store: Store) -> None:
    account = await new_account(store)
    other = await new_account(store, "someone-else")
    refused = (ValueError, sqlite3.IntegrityError, asyncpg.ForeignKeyViolationError)
    for stranger in (
        refresh(account, family_id="fam-2"),
        refresh(account, client_id="other"),
        refresh(account, session_id="sid-2"),
        refresh(other),
    ):
        with pytest.raises(refused):
            await store.refresh_tokens.start_family(family(account), stranger)
    assert await store.refresh_tokens.get("rt-1") is None


async def test_a_family_without_refresh_token_lives_until_its_expiry(store: Store) -> None:
    account = await new_account(store)
    await store.refresh_tokens.start_family(family(account, expires_at=at(300)))
    assert await store.refresh_tokens.is_family_live("fam-1", at(299))
    assert not await store.refresh_tokens.is_family_live("fam-1", at(300))
    assert not await store.refresh_tokens.is_family_live("unknown", at(1))


async def test_rotation_replaces_the_presented_token_in_its_family(store: Store) -> None:
    account = await new_account(store)
    await started(store, account)
    later = refresh(account, "rt-2", created_at=at(10), expires_at=at(10) + 30 * DAY)
    result = await store.refresh_tokens.rotate("rt-fam-1", later, at(10))
    assert isinstance(result, Rotated)
    assert result.current == later
    assert result.previous.token_hash == "rt-fam-1" and result.previous.replaced_at == at(10)
    assert await store.refresh_tokens.get("rt-fam-1") == result.previous
    assert await store.refresh_tokens.get("rt-2") == later
    [kept] = await store.refresh_tokens.for_account(account)
    assert kept.expires_at == later.expires_at  # moved with the new token
    # The new one rotates in turn.
    third = refresh(account, "rt-3", created_at=at(20))
    assert isinstance(await store.refresh_tokens.rotate("rt-2", third, at(20)), Rotated)


async def test_presenting_a_replaced_token_revokes_the_whole_family(store: Store) -> None:
    account = await new_account(store)
    await started(store, account)
    await store.refresh_tokens.rotate("rt-fam-1", refresh(account, "rt-2"), at(10))
    result = await store.refresh_tokens.rotate("rt-fam-1", refresh(account, "rt-x"), at(20))
    assert isinstance(result, Reused)
    assert result.presented.token_hash == "rt-fam-1"
    assert result.presented.replaced_at == at(10) and result.presented.revoked_at is None
    assert not await store.refresh_tokens.is_family_live("fam-1", at(21))
    current = await store.refresh_tokens.get("rt-2")
    assert current is not None and current.revoked_at == at(20)
    assert await store.refresh_tokens.get("rt-x") is None
    # The legitimate holder's token is dead now too; each replay is reuse again.
    assert await store.refresh_tokens.rotate("rt-2", refresh(account, "rt-3"), at(30)) is None
    again = await store.refresh_tokens.rotate("rt-fam-1", refresh(account, "rt-4"), at(30))
    assert isinstance(again, Reused) and again.presented.revoked_at == at(20)


async def test_expired_revoked_and_unknown_tokens_do_not_rotate(store: Store) -> None:
    account = await new_account(store)
    await started(store, account, expires_at=at(100))
    assert await store.refresh_tokens.rotate("unknown", refresh(account, "rt-2"), at(1)) is None
    assert await store.refresh_tokens.rotate("rt-fam-1", refresh(account, "rt-2"), at(100)) is None
    token = await store.refresh_tokens.get("rt-fam-1")
    assert token is not None and token.replaced_at is None  # nothing changed
    assert await store.refresh_tokens.get("rt-2") is None
    await started(store, account, "fam-2")
    assert await store.refresh_tokens.revoke_family("fam-2", at(1))
    assert (
        await store.refresh_tokens.rotate("rt-fam-2", refresh(account, "rt-3", "fam-2"), at(2))
        is None
    )
    assert await store.refresh_tokens.get("rt-3") is None


async def test_a_replaced_token_presented_after_its_expiry_is_only_invalid(store: Store) -> None:
    account = await new_account(store)
    await started(store, account, expires_at=at(100))
    await store.refresh_tokens.rotate("rt-fam-1", refresh(account, "rt-2"), at(10))
    assert await store.refresh_tokens.rotate("rt-fam-1", refresh(account, "rt-3"), at(100)) is None
    assert await store.refresh_tokens.is_family_live("fam-1", at(100))


async def test_a_new_token_of_another_family_is_refused_and_nothing_changes(
    store: Store,
) -> None:
    account = await new_account(store)
    await started(store, account)
    await started(store, account, "fam-2")
    for stranger in (
        refresh(account, "rt-2", "fam-2"),
        refresh(account, "rt-2", "fam-2", client_id="other"),
    ):
        with pytest.raises(ValueError, match="family"):
            await store.refresh_tokens.rotate("rt-fam-1", stranger, at(1))
    token = await store.refresh_tokens.get("rt-fam-1")
    assert token is not None and token.replaced_at is None
    assert await store.refresh_tokens.get("rt-2") is None


async def test_concurrent_rotations_of_one_token_have_one_winner_and_end_the_family(
    store: Store,
) -> None:
    account = await new_account(store)
    await started(store, account)
    results = await asyncio.gather(
        *(
            store.refresh_tokens.rotate("rt-fam-1", refresh(account, f"rt-new-{n}"), at(1))
            for n in range(8)
        )
    )
    rotated = [r for r in results if isinstance(r, Rotated)]
    assert len(rotated) == 1
    assert all(isinstance(r, Reused) for r in results if r is not rotated[0])
    assert not await store.refresh_tokens.is_family_live("fam-1", at(2))
    winner = await store.refresh_tokens.get(rotated[0].current.token_hash)
    assert winner is not None and winner.revoked_at == at(1)


async def test_concurrent_units_rotating_one_token_have_one_winner(store: Store) -> None:
    """On PostgreSQL each unit is its own connection and transaction; the winner keeps its
    transaction open a moment, so the losers wait for its row lock."""
    account = await new_account(store)
    await started(store, account)

    async def rotate(n: int) -> Rotated | Reused | None:
        async with store.units.begin() as tx:
            result = await tx.refresh_tokens.rotate(
                "rt-fam-1", refresh(account, f"rt-new-{n}"), at(1)
            )
            if isinstance(result, Rotated):
                await asyncio.sleep(0.05)
            return result

    results = await asyncio.gather(*(rotate(n) for n in range(6)))
    assert sum(isinstance(r, Rotated) for r in results) == 1
    assert sum(isinstance(r, Reused) for r in results) == 5
    assert not await store.refresh_tokens.is_family_live("fam-1", at(2))


async def test_reuse_racing_a_rotation_leaves_no_live_token(store: Store) -> None:
    """An attacker replays the replaced token while the holder rotates the current one: the
    family ends whichever commits first, the holder's new token included."""
    account = await new_account(store)
    await started(store, account)
    await store.refresh_tokens.rotate("rt-fam-1", refresh(account, "rt-2"), at(1))
    await asyncio.gather(
        store.refresh_tokens.rotate("rt-2", refresh(account, "rt-3"), at(2)),
        store.refresh_tokens.rotate("rt-fam-1", refresh(account, "rt-x"), at(2)),
    )
    for token_hash in ("rt-fam-1", "rt-2", "rt-3"):
        token = await store.refresh_tokens.get(token_hash)
        assert token is None or not token.current(at(3)), token_hash
    assert not await store.refresh_tokens.is_family_live("fam-1", at(3))


async def test_revocations_by_family_session_client_and_account(store: Store) -> None:
    account = await new_account(store)
    other = await new_account(store, "someone-else")
    await started(store, account, "a-web-s1")
    await started(store, account, "a-web-s2", session_id="sid-2")
    await started(store, account, "a-cli-s1", client_id="cli")
    await started(store, account, "a-adm-s1", client_id="admin")
    await started(store, other, "b-web-s1")
    assert await store.refresh_tokens.revoke_family("a-adm-s1", at(1))
    assert not await store.refresh_tokens.revoke_family("a-adm-s1", at(2))  # not live
    assert not await store.refresh_tokens.revoke_family("unknown", at(2))
    assert sorted(await store.refresh_tokens.revoke_for_session("sid-1", at(3))) == [
        "a-cli-s1",
        "a-web-s1",
        "b-web-s1",
    ]
    assert await store.refresh_tokens.revoke_for_client(account, "web", at(4)) == ["a-web-s2"]
    assert await store.refresh_tokens.revoke_for_account(account, at(5)) == []
    await started(store, account, "a-late", created_at=at(6))
    assert await store.refresh_tokens.revoke_for_account(account, at(7)) == ["a-late"]
    assert await store.refresh_tokens.revoke_for_client("not-an-account", "web", at(8)) == []
    revoked = await store.refresh_tokens.get("rt-a-cli-s1")
    assert revoked is not None and revoked.revoked_at == at(3)
    families = await store.refresh_tokens.for_account(account)
    assert families[0].family_id == "a-late"  # newest first
    assert {f.family_id: f.revoked_at for f in families} == {
        "a-late": at(7),
        "a-web-s1": at(3),
        "a-web-s2": at(4),
        "a-cli-s1": at(3),
        "a-adm-s1": at(1),
    }


async def test_a_family_started_in_a_failed_unit_is_not_there(store: Store) -> None:
    account = await new_account(store)
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            await tx.refresh_tokens.start_family(family(account), refresh(account, "rt-1"))
            raise Boom
    assert await store.refresh_tokens.get("rt-1") is None
    assert not await store.refresh_tokens.is_family_live("fam-1", at(1))
    async with store.units.begin() as tx:
        await tx.refresh_tokens.start_family(family(account), refresh(account, "rt-1"))
    assert await store.refresh_tokens.get("rt-1") is not None


async def test_purge_drops_expired_tokens_then_expired_families(store: Store) -> None:
    account = await new_account(store)
    hour = dt.timedelta(hours=1)
    # A family whose first token (1 h) was rotated into one of 2 h; another of 3 h.
    await started(store, account, "short", expires_at=T0 + hour)
    rotated = await store.refresh_tokens.rotate(
        "rt-short", refresh(account, "rt-short-2", "short", expires_at=T0 + 2 * hour), at(1)
    )
    assert isinstance(rotated, Rotated)
    await started(store, account, "long", expires_at=T0 + 3 * hour)
    assert await store.refresh_tokens.purge_expired(T0 + hour) == 1  # the replaced token
    assert await store.refresh_tokens.get("rt-short") is None
    assert await store.refresh_tokens.purge_expired(T0 + 2 * hour) == 2  # token and family
    assert [f.family_id for f in await store.refresh_tokens.for_account(account)] == ["long"]
    assert await store.refresh_tokens.get("rt-long") is not None


async def test_rotated_tokens_keep_what_they_were_given(store: Store) -> None:
    account = await new_account(store)
    await started(store, account)
    narrower = attrs.evolve(refresh(account, "rt-2"), scopes=("openid",), auth_time=at(-1))
    result = await store.refresh_tokens.rotate("rt-fam-1", narrower, at(5))
    assert isinstance(result, Rotated)
    assert await store.refresh_tokens.get("rt-2") == narrower
