"""The SessionRecords contract, run against every adapter (fixture ``store``), and the
account deletion and per-account events the sessions issue needs."""

from __future__ import annotations

import asyncio
import datetime as dt

import attrs

from authgate.domain.model import Outcome, SessionRecord
from tests.support.records import T0, at, event, verified
from tests.support.stores import Store

HOUR = dt.timedelta(hours=1)


def record(sid: str = "s-1", account: str = "acct-1", **kw: object) -> SessionRecord:
    fields: dict[str, object] = {
        "provider": "google",
        "created_at": T0,
        "expires_at": T0 + HOUR,
        "absolute_expires_at": T0 + 30 * 24 * HOUR,
        "auth_time": T0,
        "client_address": "203.0.113.9",
        "user_agent": "Mozilla/5.0 ünï",
        "provider_session": "op-sid-1",
    }
    fields.update(kw)
    return SessionRecord(id=sid, account_id=account, **fields)  # type: ignore[arg-type]


async def test_a_record_round_trips_every_field(store: Store) -> None:
    stored = record()
    await store.sessions.add(stored)
    assert await store.sessions.get("s-1") == stored
    assert await store.sessions.get("unknown") is None


async def test_is_live_until_expiry_or_revocation(store: Store) -> None:
    await store.sessions.add(record())
    assert await store.sessions.is_live("s-1", at(1))
    assert not await store.sessions.is_live("s-1", T0 + HOUR)  # expiry is exclusive
    assert not await store.sessions.is_live("unknown", at(1))
    assert await store.sessions.revoke("acct-1", "s-1", at(2))
    assert not await store.sessions.is_live("s-1", at(3))
    revoked = await store.sessions.get("s-1")
    assert revoked is not None and revoked.revoked_at == at(2)


async def test_live_for_account_is_newest_first_and_only_that_account(store: Store) -> None:
    await store.sessions.add(record("old", created_at=T0))
    await store.sessions.add(record("new", created_at=at(10)))
    await store.sessions.add(record("gone", created_at=at(5)))
    await store.sessions.add(record("other", account="acct-2"))
    await store.sessions.revoke("acct-1", "gone", at(11))
    live = await store.sessions.live_for_account("acct-1", at(12))
    assert [r.id for r in live] == ["new", "old"]


async def test_extend_moves_expiry_later_only_and_never_past_the_absolute_limit(
    store: Store,
) -> None:
    await store.sessions.add(record(absolute_expires_at=T0 + 2 * HOUR))
    assert await store.sessions.extend("s-1", T0 + 90 * dt.timedelta(minutes=1), at(1))
    extended = await store.sessions.get("s-1")
    assert extended is not None and extended.expires_at == T0 + 90 * dt.timedelta(minutes=1)
    assert await store.sessions.extend("s-1", T0 + 10 * HOUR, at(2))  # capped
    capped = await store.sessions.get("s-1")
    assert capped is not None and capped.expires_at == T0 + 2 * HOUR
    assert await store.sessions.extend("s-1", at(3), at(3))  # earlier: unchanged
    unchanged = await store.sessions.get("s-1")
    assert unchanged is not None and unchanged.expires_at == T0 + 2 * HOUR
    await store.sessions.revoke("acct-1", "s-1", at(4))
    assert not await store.sessions.extend("s-1", T0 + 2 * HOUR, at(5))


async def test_only_the_owner_revokes_and_only_once(store: Store) -> None:
    await store.sessions.add(record())
    assert not await store.sessions.revoke("acct-2", "s-1", at(1))
    assert await store.sessions.is_live("s-1", at(1))
    results = await asyncio.gather(
        *(store.sessions.revoke("acct-1", "s-1", at(2)) for _ in range(50))
    )
    assert results.count(True) == 1


async def test_revoke_all_with_keep_and_provider(store: Store) -> None:
    await store.sessions.add(record("g1"))
    await store.sessions.add(record("g2"))
    await store.sessions.add(record("f1", provider="facebook"))
    await store.sessions.add(record("x", account="acct-2"))
    assert await store.sessions.revoke_all("acct-1", at(1), provider="facebook") == ["f1"]
    assert sorted(await store.sessions.revoke_all("acct-1", at(2), keep="g2")) == ["g1"]
    assert await store.sessions.is_live("g2", at(3))
    assert await store.sessions.is_live("x", at(3))
    assert await store.sessions.revoke_all("acct-1", at(4)) == ["g2"]
    assert await store.sessions.revoke_all("acct-1", at(5)) == []


async def test_revoke_all_of_one_passkey(store: Store) -> None:
    await store.sessions.add(record("p1", provider="passkey", passkey_id="key-1"))
    await store.sessions.add(record("p1-own", provider="passkey", passkey_id="key-1"))
    await store.sessions.add(record("p2", provider="passkey", passkey_id="key-2"))
    await store.sessions.add(record("g1"))
    await store.sessions.add(record("x", account="acct-2", provider="passkey", passkey_id="key-1"))
    found = await store.sessions.get("p1")
    assert found is not None and found.passkey_id == "key-1"
    ended = await store.sessions.revoke_all("acct-1", at(1), keep="p1-own", passkey_id="key-1")
    assert ended == ["p1"]
    for live in ("p1-own", "p2", "g1", "x"):
        assert await store.sessions.is_live(live, at(2)), live


async def test_for_account_includes_revoked_and_purge_drops_expired(store: Store) -> None:
    await store.sessions.add(record("a", created_at=T0, expires_at=T0 + HOUR))
    await store.sessions.add(record("b", created_at=at(1), expires_at=T0 + 3 * HOUR))
    await store.sessions.revoke("acct-1", "b", at(2))
    assert [r.id for r in await store.sessions.for_account("acct-1")] == ["b", "a"]
    assert await store.sessions.purge_expired(T0 + 2 * HOUR) == 1
    assert [r.id for r in await store.sessions.for_account("acct-1")] == ["b"]


async def test_a_session_recorded_in_a_failed_unit_is_not_there(store: Store) -> None:
    class Boom(Exception):
        pass

    try:
        async with store.units.begin() as tx:
            await tx.sessions.add(record("doomed"))
            raise Boom
    except Boom:
        pass
    assert await store.sessions.get("doomed") is None
    async with store.units.begin() as tx:
        account, _ = await tx.accounts.create_with_identity(verified(subject="u"), T0)
        await tx.sessions.add(record("kept", account=account.id))
    kept = await store.sessions.get("kept")
    assert kept is not None and kept.account_id == account.id


async def test_deleting_an_account_removes_it_and_its_identities(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(verified(subject="leaver"), T0)
    await store.accounts.link_identity(account.id, verified("facebook", "fb-leaver"), at(1))
    other, _ = await store.accounts.create_with_identity(verified(subject="stayer"), T0)
    assert await store.accounts.delete(account.id)
    assert await store.accounts.get(account.id) is None
    assert await store.accounts.find_by_identity(verified(subject="leaver").identity) is None
    assert await store.accounts.list_identities(account.id) == []
    assert not await store.accounts.delete(account.id)
    assert not await store.accounts.delete("not-an-id")
    assert await store.accounts.get(other.id) is not None
    # The identity is free again: a later sign-in with it is a new user.
    again, created = await store.accounts.create_with_identity(verified(subject="leaver"), at(2))
    assert created and again.id != account.id


async def test_events_for_one_account_newest_first(store: Store) -> None:
    await store.events.record(event(1, account_id="acct-1"))
    await store.events.record(event(2, Outcome.UNLINKED, account_id="acct-1"))
    await store.events.record(event(3, account_id="acct-2"))
    mine = await store.events.for_account("acct-1")
    assert [e.outcome for e in mine] == [Outcome.UNLINKED, Outcome.SIGNED_IN]
    assert [e.at for e in await store.events.for_account("acct-1", limit=1)] == [at(2)]
    assert attrs.asdict(mine[0])["account_id"] == "acct-1"
