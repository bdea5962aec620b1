"""The RefreshTokens contract's one-read, one-write refresh, against every adapter (fixture
``store``): ``presented`` reads the token with its session's liveness, ``replace`` rotates a
current token and writes nothing otherwise (``rotate`` then tells reuse from the rest)."""

from __future__ import annotations

import asyncio
import datetime as dt

from authgate.domain.model import SessionRecord
from authgate.domain.openid.records import RefreshToken
from authgate.ports.openid import Reused
from tests.support.oauth_records import DAY, family, new_account, refresh
from tests.support.records import T0, at
from tests.support.stores import Store


class Stale(Exception):
    pass


def session(account_id: str, sid: str = "sid-1") -> SessionRecord:
    return SessionRecord(
        id=sid,
        account_id=account_id,
        provider="google",
        created_at=T0,
        expires_at=at(3600),
        absolute_expires_at=at(86400),
        auth_time=T0,
        client_address="127.0.0.1",
        user_agent="tests",
    )


async def started(store: Store, account: str) -> None:
    await store.refresh_tokens.start_family(family(account), refresh(account, "rt-1"))


async def replaced(store: Store, new: RefreshToken, now: dt.datetime, hash_: str = "rt-1") -> bool:
    """``replace`` in a unit of its own: whether it replaced, be the answer given at once or
    as the unit's failure with the ``stale`` it was handed."""
    stale = Stale()
    try:
        async with store.units.begin() as tx:
            return await tx.refresh_tokens.replace(hash_, new, now, stale)
    except Stale as e:
        assert e is stale
        return False


async def test_the_presented_token_comes_with_its_sessions_liveness(store: Store) -> None:
    account = await new_account(store)
    await started(store, account)
    assert await store.refresh_tokens.presented("unknown", at(1)) is None
    token = await store.refresh_tokens.get("rt-1")
    assert token is not None
    assert await store.refresh_tokens.presented("rt-1", at(1)) == (token, False)  # no session
    await store.sessions.add(session(account))
    assert await store.refresh_tokens.presented("rt-1", at(1)) == (token, True)
    assert await store.refresh_tokens.presented("rt-1", at(3600)) == (token, False)  # expired
    assert await store.sessions.revoke(account, "sid-1", at(2))
    assert await store.refresh_tokens.presented("rt-1", at(3)) == (token, False)


async def test_replacing_a_current_token_rotates_it(store: Store) -> None:
    account = await new_account(store)
    await started(store, account)
    new = refresh(account, "rt-2", created_at=at(1), expires_at=T0 + 40 * DAY)
    assert await replaced(store, new, at(1))
    old = await store.refresh_tokens.get("rt-1")
    assert old is not None and old.replaced_at == at(1)
    assert await store.refresh_tokens.get("rt-2") == new
    [kept] = await store.refresh_tokens.for_account(account)
    assert kept.expires_at == new.expires_at and kept.revoked_at is None


async def test_a_token_no_longer_current_is_not_replaced_and_nothing_is_written(
    store: Store,
) -> None:
    account = await new_account(store)
    await started(store, account)
    assert await replaced(store, refresh(account, "rt-2"), at(1))
    # Replaced already: nothing written, the family not revoked (rotate does that).
    assert not await replaced(store, refresh(account, "rt-x"), at(2))
    assert await store.refresh_tokens.get("rt-x") is None
    assert await store.refresh_tokens.is_family_live("fam-1", at(2))
    # Expired (the current one, at its expiry).
    assert not await replaced(store, refresh(account, "rt-y"), T0 + 30 * DAY, "rt-2")
    assert await store.refresh_tokens.get("rt-y") is None
    # Revoked with its family.
    assert await store.refresh_tokens.revoke_family("fam-1", at(3))
    assert not await replaced(store, refresh(account, "rt-z"), at(4), "rt-2")
    assert await store.refresh_tokens.get("rt-z") is None
    current = await store.refresh_tokens.get("rt-2")
    assert current is not None and current.replaced_at is None
    # rotate tells a replaced one's reuse.
    again = await store.refresh_tokens.rotate("rt-1", refresh(account, "rt-w"), at(5))
    assert isinstance(again, Reused)


async def test_concurrent_replacements_of_one_token_have_one_winner(store: Store) -> None:
    account = await new_account(store)
    await started(store, account)
    results = await asyncio.gather(
        *(replaced(store, refresh(account, f"rt-new-{n}"), at(1)) for n in range(6))
    )
    assert sorted(results) == [False] * 5 + [True]
    kept = [await store.refresh_tokens.get(f"rt-new-{n}") for n in range(6)]
    assert [k is not None for k in kept] == results  # the losers wrote nothing
    assert await store.refresh_tokens.is_family_live("fam-1", at(2))
