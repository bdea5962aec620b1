"""The storage that provider events need, run against every adapter (fixture
``store``): the one-time jti store inside a unit of work, the identity's provider-reported
state, and ending the sessions of a provider's sid."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from authgate.domain.model import EventId, ProviderIdentity
from tests.support.records import T0, at, verified
from tests.support.stores import Store

from .test_session_records import record

LATER = T0 + dt.timedelta(days=1)


def event_id(
    jti: str = "jti-1", issuer: str = "https://op.example", until: dt.datetime = LATER
) -> EventId:
    return EventId(issuer=issuer, jti=jti, expires_at=until)


async def first_sight(store: Store, event: EventId, now: dt.datetime) -> bool:
    async with store.units.begin() as tx:
        return await tx.seen_events.first_sight(event, now)


async def test_an_event_is_seen_once_per_issuer_until_it_expires(store: Store) -> None:
    assert await first_sight(store, event_id(), T0)
    assert not await first_sight(store, event_id(), at(1))
    assert await first_sight(store, event_id(issuer="https://other.example"), at(2))
    assert await first_sight(store, event_id("jti-2"), at(3))
    # Past its expiry the row is dropped: the same jti would be refused as too old anyway.
    assert await first_sight(store, event_id(), LATER + dt.timedelta(seconds=1))


async def test_a_rolled_back_unit_forgets_the_event(store: Store) -> None:
    with pytest.raises(RuntimeError):
        async with store.units.begin() as tx:
            assert await tx.seen_events.first_sight(event_id(), T0)
            raise RuntimeError("the event's change failed")
    assert await first_sight(store, event_id(), at(1))


async def test_concurrent_deliveries_of_one_event_are_seen_once(store: Store) -> None:
    seen = await asyncio.gather(*(first_sight(store, event_id(), at(i)) for i in range(10)))
    assert sum(seen) == 1


async def test_an_identitys_provider_reported_state_is_recorded(store: Store) -> None:
    v = verified("google", "g-1")
    account, _ = await store.accounts.create_with_identity(v, T0)
    fresh = await store.accounts.get_identity(v.identity)
    assert fresh is not None and fresh.account_id == account.id
    assert (fresh.disabled_reason, fresh.email_disabled) == (None, False)

    assert await store.accounts.set_identity_disabled(v.identity, "hijacking")
    assert await store.accounts.set_identity_email_disabled(v.identity, True)
    changed = await store.accounts.get_identity(v.identity)
    assert changed is not None
    assert (changed.disabled_reason, changed.email_disabled) == ("hijacking", True)
    [listed] = await store.accounts.list_identities(account.id)
    assert listed == changed

    assert await store.accounts.set_identity_disabled(v.identity, None)
    enabled = await store.accounts.get_identity(v.identity)
    assert enabled is not None and enabled.disabled_reason is None

    nobody = ProviderIdentity("google", "nobody")
    assert await store.accounts.get_identity(nobody) is None
    assert not await store.accounts.set_identity_disabled(nobody, "hijacking")
    assert not await store.accounts.set_identity_email_disabled(nobody, True)


async def test_a_provider_session_is_ended_for_its_provider_and_account(store: Store) -> None:
    await store.sessions.add(record("a-1", "acct-1", provider_session="op-sid"))
    await store.sessions.add(record("a-2", "acct-1", provider_session="other-sid"))
    await store.sessions.add(record("b-1", "acct-2", provider_session="op-sid"))
    await store.sessions.add(record("c-1", "acct-3", provider="apple", provider_session="op-sid"))

    only_b = await store.sessions.revoke_provider_session(
        "google", "op-sid", at(1), account_id="acct-2"
    )
    assert only_b == [("acct-2", "b-1")]
    rest = await store.sessions.revoke_provider_session("google", "op-sid", at(2))
    assert rest == [("acct-1", "a-1")]
    assert await store.sessions.revoke_provider_session("google", "op-sid", at(3)) == []
    assert await store.sessions.is_live("a-2", at(4))
    assert await store.sessions.is_live("c-1", at(4))
