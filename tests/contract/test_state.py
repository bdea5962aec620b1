"""The StateStore contract, run against every adapter (fixture ``store``)."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from authgate.domain.model import Intent
from authgate.ports.state import StateExists
from tests.support.records import T0, at, pending
from tests.support.stores import Store

TTL = dt.timedelta(minutes=10)


async def test_put_then_take_returns_the_pending_sign_in(store: Store) -> None:
    stored = pending(
        "s-1",
        intent=Intent.LINK,
        return_to="https://app.example.com/settings?tab=providers",
        account_id="5b0e2b8c-4b7e-4f51-9d1b-1a3c1d2e3f40",
    )
    await store.states.put(stored)
    assert await store.states.take("s-1", at(1)) == stored


async def test_optional_fields_round_trip_as_none(store: Store) -> None:
    stored = pending("s-2", code_verifier=None, nonce=None, return_to=None, account_id=None)
    await store.states.put(stored)
    assert await store.states.take("s-2", at(1)) == stored


async def test_a_state_is_taken_once(store: Store) -> None:
    await store.states.put(pending("once"))
    assert await store.states.take("once", at(1)) is not None
    assert await store.states.take("once", at(2)) is None


async def test_unknown_state_is_none(store: Store) -> None:
    assert await store.states.take("never-stored", T0) is None


async def test_put_of_a_state_in_use_raises_state_exists(store: Store) -> None:
    await store.states.put(pending("dup", provider="google"))
    with pytest.raises(StateExists):
        await store.states.put(pending("dup", provider="facebook", created=at(5)))
    taken = await store.states.take("dup", at(6))
    assert taken is not None
    assert taken.provider == "google"


async def test_concurrent_puts_of_one_state_store_it_once(store: Store) -> None:
    results = await asyncio.gather(
        *(store.states.put(pending("contested", nonce=f"n{i}")) for i in range(50)),
        return_exceptions=True,
    )
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, StateExists) for r in results if r is not None)


async def test_an_expired_state_is_never_returned(store: Store) -> None:
    await store.states.put(pending("old", created=T0, ttl=TTL))
    assert await store.states.take("old", T0 + TTL) is None  # expiry is exclusive
    assert await store.states.take("old", T0 + TTL - dt.timedelta(seconds=1)) is None  # dropped


async def test_a_state_is_returned_until_it_expires(store: Store) -> None:
    await store.states.put(pending("fresh", created=T0, ttl=TTL))
    assert await store.states.take("fresh", T0 + TTL - dt.timedelta(microseconds=1)) is not None


async def test_an_expired_state_value_can_be_stored_again(store: Store) -> None:
    await store.states.put(pending("reused", created=T0, ttl=TTL, provider="google"))
    again = pending("reused", created=T0 + TTL, ttl=TTL, provider="apple")
    await store.states.put(again)
    assert await store.states.take("reused", T0 + TTL) == again


async def test_concurrent_takes_of_one_state_have_exactly_one_winner(store: Store) -> None:
    stored = pending("race")
    await store.states.put(stored)
    results = await asyncio.gather(*(store.states.take("race", at(1)) for _ in range(50)))
    winners = [r for r in results if r is not None]
    assert winners == [stored]


async def test_purge_expired_drops_only_expired_entries(store: Store) -> None:
    await store.states.put(pending("a", created=T0, ttl=dt.timedelta(minutes=1)))
    await store.states.put(pending("b", created=T0, ttl=dt.timedelta(minutes=2)))
    await store.states.put(pending("c", created=T0, ttl=dt.timedelta(minutes=20)))
    assert await store.states.purge_expired(T0 + dt.timedelta(minutes=2)) == 2
    assert await store.states.purge_expired(T0 + dt.timedelta(minutes=2)) == 0
    assert await store.states.take("c", at(1)) is not None
    assert await store.states.take("a", at(1)) is None


async def test_state_values_are_stored_as_given(store: Store) -> None:
    odd = "x' OR '1'='1; -- \\ % _ ünï"
    await store.states.put(pending(odd))
    assert await store.states.take("x", at(1)) is None
    taken = await store.states.take(odd, at(1))
    assert taken is not None
    assert taken.state == odd
