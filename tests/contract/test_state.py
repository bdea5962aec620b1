"""The StateStore contract, run against every adapter (fixture ``store``).

A pending sign-in is found by provider, state and browser (binding hash) together.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from authgate.adapters.memory import MemoryStates
from authgate.domain.model import Intent, PendingSignIn
from authgate.ports.state import StateStoreFull
from tests.support.records import T0, at, pending
from tests.support.stores import Store

TTL = dt.timedelta(minutes=10)
BROWSER_A = "a" * 64
BROWSER_B = "b" * 64


async def take(
    store: Store, p: PendingSignIn, when: dt.datetime, binding: str | None = "same"
) -> PendingSignIn | None:
    """Take ``p``'s entry back: by its own provider, state and binding unless told otherwise."""
    browser = p.binding_hash if binding == "same" else binding
    return await store.states.take(p.provider, p.state, browser, when)


async def test_put_then_take_returns_the_pending_sign_in(store: Store) -> None:
    stored = pending(
        "s-1",
        intent=Intent.LINK,
        return_to="https://app.example.com/settings?tab=providers",
        account_id="5b0e2b8c-4b7e-4f51-9d1b-1a3c1d2e3f40",
        session_id="9f86d081884c7d659a2feaa0c55ad015",  # the session that started the link
    )
    await store.states.put(stored)
    assert await take(store, stored, at(1)) == stored


async def test_optional_fields_round_trip_as_none(store: Store) -> None:
    stored = pending(
        "s-2", code_verifier=None, nonce=None, return_to=None, account_id=None, session_id=None
    )
    await store.states.put(stored)
    assert await take(store, stored, at(1)) == stored


async def test_a_state_is_taken_once(store: Store) -> None:
    stored = pending("once")
    await store.states.put(stored)
    assert await take(store, stored, at(1)) is not None
    assert await take(store, stored, at(2)) is None


async def test_unknown_state_is_none(store: Store) -> None:
    assert await store.states.take("google", "never-stored", BROWSER_A, T0) is None


async def test_one_state_value_in_two_browsers_and_two_providers_never_collides(
    store: Store,
) -> None:
    a_google = pending("shared", provider="google", binding_hash=BROWSER_A, nonce="n-a")
    b_google = pending("shared", provider="google", binding_hash=BROWSER_B, nonce="n-b")
    a_facebook = pending("shared", provider="facebook", binding_hash=BROWSER_A, nonce="n-f")
    for p in (a_google, b_google, a_facebook):
        await store.states.put(p)
    assert await take(store, b_google, at(1)) == b_google
    assert await take(store, a_facebook, at(1)) == a_facebook
    assert await take(store, a_google, at(1)) == a_google


async def test_another_browser_or_provider_neither_takes_nor_consumes(store: Store) -> None:
    mine = pending("victim-state", provider="google", binding_hash=BROWSER_A)
    await store.states.put(mine)
    assert await store.states.take("google", "victim-state", BROWSER_B, at(1)) is None
    assert await store.states.take("facebook", "victim-state", BROWSER_A, at(1)) is None
    assert await take(store, mine, at(2)) == mine


async def test_the_same_browser_starting_again_replaces_its_own_entry(store: Store) -> None:
    first = pending("retry", nonce="first")
    again = pending("retry", nonce="again", created=at(5))
    await store.states.put(first)
    await store.states.put(again)
    assert await take(store, first, at(6)) == again
    assert await take(store, first, at(7)) is None


async def test_without_a_binding_the_newest_live_entry_of_any_browser_is_taken(
    store: Store,
) -> None:
    older = pending("unbound", binding_hash=BROWSER_A, created=T0)
    newer = pending("unbound", binding_hash=BROWSER_B, created=at(5))
    await store.states.put(older)
    await store.states.put(newer)
    assert await store.states.take("google", "unbound", None, at(6)) == newer
    assert await store.states.take("google", "unbound", None, at(6)) == older
    assert await store.states.take("google", "unbound", None, at(6)) is None


async def test_without_a_binding_an_expired_entry_is_not_taken(store: Store) -> None:
    await store.states.put(pending("gone", created=T0, ttl=TTL))
    assert await store.states.take("google", "gone", None, T0 + TTL) is None


async def test_concurrent_puts_of_one_key_leave_exactly_one_entry(store: Store) -> None:
    await asyncio.gather(
        *(store.states.put(pending("contested", nonce=f"n{i}")) for i in range(50))
    )
    taken = await store.states.take("google", "contested", "b" * 64, at(1))
    assert taken is not None
    assert taken.nonce is not None and taken.nonce.startswith("n")
    assert await store.states.take("google", "contested", "b" * 64, at(1)) is None


async def test_an_expired_state_is_never_returned(store: Store) -> None:
    old = pending("old", created=T0, ttl=TTL)
    await store.states.put(old)
    assert await take(store, old, T0 + TTL) is None  # expiry is exclusive
    assert await take(store, old, T0 + TTL - dt.timedelta(seconds=1)) is None  # dropped


async def test_a_state_is_returned_until_it_expires(store: Store) -> None:
    fresh = pending("fresh", created=T0, ttl=TTL)
    await store.states.put(fresh)
    assert await take(store, fresh, T0 + TTL - dt.timedelta(microseconds=1)) is not None


async def test_an_expired_state_value_can_be_stored_again(store: Store) -> None:
    await store.states.put(pending("reused", created=T0, ttl=TTL))
    again = pending("reused", created=T0 + TTL, ttl=TTL)
    await store.states.put(again)
    assert await take(store, again, T0 + TTL) == again


@pytest.mark.parametrize("binding", ["same", None])
async def test_concurrent_takes_of_one_state_have_exactly_one_winner(
    store: Store, binding: str | None
) -> None:
    stored = pending("race")
    await store.states.put(stored)
    results = await asyncio.gather(*(take(store, stored, at(1), binding) for _ in range(50)))
    winners = [r for r in results if r is not None]
    assert winners == [stored]


async def test_purge_expired_drops_only_expired_entries(store: Store) -> None:
    a = pending("a", created=T0, ttl=dt.timedelta(minutes=1))
    b = pending("b", created=T0, ttl=dt.timedelta(minutes=2))
    c = pending("c", created=T0, ttl=dt.timedelta(minutes=20))
    for p in (a, b, c):
        await store.states.put(p)
    assert await store.states.purge_expired(T0 + dt.timedelta(minutes=2)) == 2
    assert await store.states.purge_expired(T0 + dt.timedelta(minutes=2)) == 0
    assert await take(store, c, at(1)) is not None
    assert await take(store, a, at(1)) is None


@pytest.mark.parametrize(
    "odd", ["x' OR '1'='1; -- \\ % _ ünï", "nul\x00in state", "\u2028\ufffd" * 200]
)
async def test_any_state_value_is_found_as_given(store: Store, odd: str) -> None:
    stored = pending(odd)
    await store.states.put(stored)
    assert await store.states.take("google", odd[:3], stored.binding_hash, at(1)) is None
    taken = await take(store, stored, at(1))
    assert taken is not None
    assert taken.state == odd


async def test_a_full_memory_store_refuses_new_entries_and_keeps_live_ones() -> None:
    states = MemoryStates(max_entries=3)
    live = [pending(f"live-{i}", created=at(i)) for i in range(3)]
    for p in live:
        await states.put(p)
    with pytest.raises(StateStoreFull):
        await states.put(pending("one-too-many", created=at(4)))
    # The owner of an entry can still start again (a replacement, not a new entry).
    await states.put(pending("live-0", created=at(5)))
    for p in live[1:]:
        assert await states.take(p.provider, p.state, p.binding_hash, at(6)) == p
    assert await states.take("google", "one-too-many", "b" * 64, at(6)) is None


async def test_a_full_memory_store_makes_room_by_dropping_expired_entries() -> None:
    states = MemoryStates(max_entries=2)
    await states.put(pending("old-1", created=T0, ttl=TTL))
    await states.put(pending("old-2", created=T0, ttl=TTL))
    newcomer = pending("new", created=T0 + TTL)
    await states.put(newcomer)
    assert await states.take("google", "new", newcomer.binding_hash, T0 + TTL) == newcomer
