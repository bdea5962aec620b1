"""The SignInEventLog contract, run against every adapter (fixture ``store``)."""

from __future__ import annotations

from authgate.domain.model import Outcome
from tests.support.records import at, event
from tests.support.stores import Store


async def test_recent_gives_the_newest_first(store: Store) -> None:
    events = [
        event(0, Outcome.REGISTERED, account_id="acc-1"),
        event(10, Outcome.SIGNED_IN, account_id="acc-1", provider="apple"),
        event(20, Outcome.FAILED, detail="token_exchange_failed", client_address=None),
    ]
    for e in events:
        await store.events.record(e)
    assert await store.events.recent() == list(reversed(events))
    assert await store.events.recent(limit=2) == [events[2], events[1]]
    assert await store.events.recent(limit=0) == []


async def test_recent_orders_by_time(store: Store) -> None:
    late, early = event(50), event(5, Outcome.DENIED)
    await store.events.record(late)
    await store.events.record(early)
    assert await store.events.recent() == [late, early]


async def test_every_field_round_trips(store: Store) -> None:
    e = event(
        1,
        Outcome.INVALID_STATE,
        provider="facebook",
        client_address="2001:db8::1",
        user_agent="curl/8.0 'quoted' \\ ü",
        account_id="5b0e2b8c-4b7e-4f51-9d1b-1a3c1d2e3f40",
        detail="state unknown, expired or already used",
    )
    bare = event(2, Outcome.ACCOUNT_NOT_FOUND, client_address=None, user_agent=None)
    await store.events.record(e)
    await store.events.record(bare)
    assert await store.events.recent() == [bare, e]


async def test_recent_of_an_empty_log(store: Store) -> None:
    assert await store.events.recent() == []


async def test_purge_before_drops_older_events_only(store: Store) -> None:
    for seconds in (0, 10, 20, 30):
        await store.events.record(event(seconds))
    assert await store.events.purge_before(at(20)) == 2
    assert [e.at for e in await store.events.recent()] == [at(30), at(20)]
    assert await store.events.purge_before(at(20)) == 0
