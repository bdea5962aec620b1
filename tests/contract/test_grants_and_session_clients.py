"""The Grants and SessionClients contracts, run against every adapter (fixture ``store``),
and the deletion of an account taking every OpenID Provider row of it along."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from authgate.domain.model import SessionRecord
from authgate.domain.openid.records import Grant
from tests.support.oauth_records import (
    DAY,
    code,
    family,
    grant,
    new_account,
    refresh,
    session_client,
)
from tests.support.records import T0, at
from tests.support.stores import Store


class Boom(Exception):
    pass


async def test_a_grant_round_trips_and_a_second_consent_widens_it(store: Store) -> None:
    account = await new_account(store)
    first = grant(account, "web", "openid", "email")
    assert await store.grants.put(first) == first
    assert await store.grants.get(account, "web") == first
    assert await store.grants.get(account, "other") is None
    assert await store.grants.get("not-an-account", "web") is None
    await store.grants.touch(account, "web", at(5))
    widened = await store.grants.put(grant(account, "web", "openid", "profile", granted_at=at(10)))
    assert widened == Grant(account, "web", {"openid", "email", "profile"}, at(10), at(5))
    assert await store.grants.get(account, "web") == widened


async def test_put_keeps_the_later_last_use(store: Store) -> None:
    account = await new_account(store)
    await store.grants.put(grant(account, last_used_at=at(20)))
    kept = await store.grants.put(grant(account, last_used_at=at(10), granted_at=at(30)))
    assert kept.last_used_at == at(20)
    kept = await store.grants.put(grant(account, last_used_at=None, granted_at=at(40)))
    assert kept.last_used_at == at(20)
    kept = await store.grants.put(grant(account, last_used_at=at(50), granted_at=at(50)))
    assert kept.last_used_at == at(50)


async def test_touch_moves_last_use_forward_only_and_needs_a_grant(store: Store) -> None:
    account = await new_account(store)
    await store.grants.touch(account, "web", at(1))  # no grant: nothing happens
    assert await store.grants.get(account, "web") is None
    await store.grants.put(grant(account))
    await store.grants.touch(account, "web", at(10))
    await store.grants.touch(account, "web", at(5))
    kept = await store.grants.get(account, "web")
    assert kept is not None and kept.last_used_at == at(10)


async def test_grants_per_account_by_client_and_removal(store: Store) -> None:
    account = await new_account(store)
    other = await new_account(store, "someone-else")
    await store.grants.put(grant(account, "web"))
    await store.grants.put(grant(account, "admin", "openid", "email"))
    await store.grants.put(grant(other, "web"))
    assert [g.client_id for g in await store.grants.for_account(account)] == ["admin", "web"]
    assert await store.grants.remove(account, "web")
    assert not await store.grants.remove(account, "web")
    assert not await store.grants.remove("not-an-account", "web")
    assert [g.client_id for g in await store.grants.for_account(account)] == ["admin"]
    assert await store.grants.get(other, "web") is not None


async def test_a_grant_put_in_a_failed_unit_is_not_there(store: Store) -> None:
    account = await new_account(store)
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            await tx.grants.put(grant(account))
            raise Boom
    assert await store.grants.get(account, "web") is None


async def test_session_clients_are_added_once_and_listed_first_served_first(
    store: Store,
) -> None:
    account = await new_account(store)
    other = await new_account(store, "someone-else")
    first = session_client(account, "sid-1", "web", first_at=at(1))
    await store.session_clients.add(first)
    await store.session_clients.add(session_client(account, "sid-1", "web", first_at=at(9)))
    await store.session_clients.add(session_client(account, "sid-1", "admin", first_at=at(2)))
    await store.session_clients.add(session_client(account, "sid-2", "web", first_at=at(0)))
    await store.session_clients.add(session_client(other, "sid-3", "web"))
    assert await store.session_clients.for_session("sid-1") == [
        first,
        session_client(account, "sid-1", "admin", first_at=at(2)),
    ]
    assert [
        (c.session_id, c.client_id) for c in await store.session_clients.for_account(account)
    ] == [
        ("sid-2", "web"),
        ("sid-1", "web"),
        ("sid-1", "admin"),
    ]
    assert await store.session_clients.for_session("unknown") == []
    assert await store.session_clients.for_account("not-an-account") == []


async def test_session_clients_are_purged_when_their_session_is_over(store: Store) -> None:
    account = await new_account(store)
    await store.session_clients.add(session_client(account, "sid-1", expires_at=T0 + DAY))
    await store.session_clients.add(session_client(account, "sid-2", expires_at=T0 + 2 * DAY))
    assert await store.session_clients.purge_expired(T0 + DAY) == 1
    assert [c.session_id for c in await store.session_clients.for_account(account)] == ["sid-2"]


def session_record(sid: str, account: str, expires_at: dt.datetime) -> SessionRecord:
    return SessionRecord(
        id=sid,
        account_id=account,
        provider="google",
        created_at=T0,
        expires_at=expires_at,
        absolute_expires_at=T0 + 30 * DAY,
        auth_time=T0,
    )


async def test_the_clients_of_a_session_that_expired_unrevoked_are_taken_once(
    store: Store,
) -> None:
    """A session that ends by expiring is noticed by taking its clients' rows (whom to tell);
    a revoked session's clients were told when it was revoked and are not taken; a session
    is not purged while its clients are still to be taken."""
    account = await new_account(store)
    hour = dt.timedelta(hours=1)
    await store.sessions.add(session_record("s-expired", account, T0 + hour))
    await store.sessions.add(session_record("s-revoked", account, T0 + hour))
    await store.sessions.add(session_record("s-later", account, T0 + 2 * hour))
    await store.sessions.add(session_record("s-live", account, T0 + 5 * hour))
    assert await store.sessions.revoke(account, "s-revoked", at(10))
    await store.session_clients.add(session_client(account, "s-expired", "web", first_at=at(2)))
    await store.session_clients.add(session_client(account, "s-expired", "admin", first_at=at(1)))
    for sid in ("s-revoked", "s-later", "s-live"):
        await store.session_clients.add(session_client(account, sid, "web"))
    now = T0 + 3 * hour

    # only the revoked session is purged: the others still owe their clients a word
    assert await store.sessions.purge_expired(now) == 1
    assert await store.sessions.get("s-expired") is not None

    async with store.units.begin() as tx:  # at most the limit, the first expired first
        taken = await tx.session_clients.take_expired(now, 2)
    assert taken == [
        session_client(account, "s-expired", "admin", first_at=at(1)),
        session_client(account, "s-expired", "web", first_at=at(2)),
    ]
    async with store.units.begin() as tx:
        taken = await tx.session_clients.take_expired(now, 10)
    assert [(c.session_id, c.client_id) for c in taken] == [("s-later", "web")]
    async with store.units.begin() as tx:  # each row once
        assert await tx.session_clients.take_expired(now, 10) == []
    assert await store.session_clients.for_session("s-expired") == []
    assert len(await store.session_clients.for_session("s-revoked")) == 1
    assert len(await store.session_clients.for_session("s-live")) == 1

    assert await store.sessions.purge_expired(now) == 2  # told: the records may go
    assert await store.sessions.get("s-live") is not None


async def test_concurrent_takers_take_each_expired_session_client_once(store: Store) -> None:
    """Several instances sweep at the same time: every row is taken by exactly one."""
    account = await new_account(store)
    for n in range(6):
        await store.sessions.add(session_record(f"s-{n}", account, T0 + DAY))
        for client_id in ("web", "admin"):
            await store.session_clients.add(session_client(account, f"s-{n}", client_id))

    async def take() -> list[tuple[str, str]]:
        taken: list[tuple[str, str]] = []
        while True:
            async with store.units.begin() as tx:
                batch = await tx.session_clients.take_expired(T0 + 2 * DAY, 3)
            taken += [(c.session_id, c.client_id) for c in batch]
            if not batch:
                return taken
            await asyncio.sleep(0)

    takers = await asyncio.gather(*(take() for _ in range(4)))
    every = [row for taker in takers for row in taker]
    assert sorted(every) == sorted(
        (f"s-{n}", client_id) for n in range(6) for client_id in ("web", "admin")
    )


async def test_taking_expired_session_clients_rolls_back_with_its_unit(store: Store) -> None:
    account = await new_account(store)
    await store.sessions.add(session_record("s-1", account, T0 + DAY))
    await store.session_clients.add(session_client(account, "s-1"))
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            assert len(await tx.session_clients.take_expired(T0 + 2 * DAY, 10)) == 1
            raise Boom
    assert len(await store.session_clients.for_session("s-1")) == 1


@pytest.mark.parametrize("in_unit", [False, True], ids=["alone", "in-a-unit"])
async def test_deleting_an_account_deletes_its_codes_tokens_grants_and_session_clients(
    store: Store, in_unit: bool
) -> None:
    leaver = await new_account(store, "leaver")
    stayer = await new_account(store, "stayer")
    for account, suffix in ((leaver, "l"), (stayer, "s")):
        await store.authorization_codes.add(code(account, f"code-{suffix}"))
        await store.refresh_tokens.start_family(
            family(account, f"fam-{suffix}"), refresh(account, f"rt-{suffix}", f"fam-{suffix}")
        )
        await store.grants.put(grant(account))
        await store.session_clients.add(session_client(account, f"sid-{suffix}"))
    if in_unit:
        async with store.units.begin() as tx:
            assert await tx.accounts.delete(leaver)
    else:
        assert await store.accounts.delete(leaver)

    assert await store.authorization_codes.redeem("code-l", at(1)) is None
    assert await store.refresh_tokens.get("rt-l") is None
    assert not await store.refresh_tokens.is_family_live("fam-l", at(1))
    assert await store.refresh_tokens.for_account(leaver) == []
    assert await store.grants.for_account(leaver) == []
    assert await store.session_clients.for_session("sid-l") == []
    assert await store.session_clients.for_account(leaver) == []

    assert await store.authorization_codes.redeem("code-s", at(1)) is not None
    assert await store.refresh_tokens.get("rt-s") is not None
    assert await store.refresh_tokens.is_family_live("fam-s", at(1))
    assert len(await store.grants.for_account(stayer)) == 1
    assert len(await store.session_clients.for_session("sid-s")) == 1


async def test_an_account_deletion_rolled_back_keeps_its_rows(store: Store) -> None:
    account = await new_account(store)
    await store.refresh_tokens.start_family(family(account), refresh(account))
    await store.grants.put(grant(account))
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            assert await tx.accounts.delete(account)
            raise Boom
    assert await store.refresh_tokens.get("rt-1") is not None
    assert await store.grants.get(account, "web") is not None


async def test_consent_is_written_only_while_the_grant_is_as_the_page_saw_it(store: Store) -> None:
    account = await new_account(store)
    first = grant(account, "web", "openid", granted_at=at(10))
    assert await store.grants.consent(first, None) == first
    # The same form again (it saw no grant): nothing written.
    assert (
        await store.grants.consent(grant(account, "web", "email", granted_at=at(20)), None) is None
    )
    assert await store.grants.get(account, "web") == first
    # A page that saw the grant of at(10) widens it, once.
    wider = grant(account, "web", "profile", granted_at=at(30))
    kept = await store.grants.consent(wider, at(10))
    assert kept is not None and kept.scopes == {"openid", "profile"}
    assert kept.granted_at == at(30)
    assert (
        await store.grants.consent(grant(account, "web", "email", granted_at=at(40)), at(10))
        is None
    )
    assert await store.grants.get(account, "web") == kept
    # Withdrawn meanwhile: a page that saw the grant writes nothing.
    assert await store.grants.remove(account, "web")
    assert await store.grants.consent(grant(account, "web", granted_at=at(50)), at(30)) is None
    assert await store.grants.get(account, "web") is None


async def test_of_two_concurrent_answers_to_one_consent_page_one_is_written(store: Store) -> None:
    account = await new_account(store)
    for seen in (None, at(5)):
        answers = [
            grant(account, "web", "openid", scope, granted_at=at(5) if seen is None else at(6))
            for scope in ("email", "profile")
        ]
        kept = await asyncio.gather(*(store.grants.consent(a, seen) for a in answers))
        assert len([k for k in kept if k is not None]) == 1, kept
