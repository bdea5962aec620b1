"""Sessions: issued with a record, verified while live, ended one, all or all but one, renewed
up to their absolute limit, and the window of a recent authentication."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pytest

from authgate.adapters.revocations import LocalRevocations
from authgate.domain import errors
from authgate.domain.model import IssuedSession, Outcome
from authgate.ports.session_tokens import InvalidSession
from authgate.services.sessions import SessionService
from tests.services.conftest import CLIENT
from tests.services.fakes import FixedClock
from tests.support.stores import MemoryStore

ACCOUNT = "account-1"


async def issue(
    sessions: SessionService,
    store: MemoryStore,
    account_id: str = ACCOUNT,
    *,
    provider: str = "google",
    provider_session: str | None = None,
) -> IssuedSession:
    """A session issued in a unit of work of its own, as a sign-in issues it."""
    async with store.units.begin() as tx:
        return await sessions.issue(
            tx,
            account_id,
            provider,
            CLIENT,
            auth_time=sessions.clock.now(),
            provider_session=provider_session,
        )


async def assert_refused(sessions: SessionService, token: str) -> None:
    with pytest.raises(InvalidSession):
        await sessions.verify(token)


# -- issuing and verifying ----------------------------------------------------------------------


async def test_an_issued_session_is_recorded_and_its_token_verifies(
    sessions: SessionService, store: MemoryStore, clock: FixedClock
) -> None:
    issued = await issue(sessions, store, provider_session="idp-sid")
    record = await store.sessions.get(issued.session_id)
    assert record is not None
    assert (record.account_id, record.provider, record.provider_session) == (
        ACCOUNT,
        "google",
        "idp-sid",
    )
    assert record.created_at == clock.now() and record.revoked_at is None
    assert record.expires_at == issued.expires_at == clock.now() + dt.timedelta(hours=1)
    assert record.absolute_expires_at == clock.now() + dt.timedelta(hours=3)
    assert (record.client_address, record.user_agent) == (CLIENT.address, CLIENT.user_agent)
    claims = await sessions.verify(issued.token)
    assert (claims.account_id, claims.provider, claims.session_id) == (
        ACCOUNT,
        "google",
        issued.session_id,
    )
    assert claims.expires_at == issued.expires_at
    assert [r.id for r in await sessions.live_sessions(ACCOUNT)] == [issued.session_id]


async def test_a_session_whose_unit_of_work_failed_is_unknown(
    sessions: SessionService, store: MemoryStore, clock: FixedClock
) -> None:
    issued: list[IssuedSession] = []
    with pytest.raises(RuntimeError):
        async with store.units.begin() as tx:
            issued.append(
                await sessions.issue(tx, ACCOUNT, "google", CLIENT, auth_time=clock.now())
            )
            raise RuntimeError("the sign-in failed after the session was issued")
    assert await store.sessions.get(issued[0].session_id) is None
    await assert_refused(sessions, issued[0].token)  # well signed, but never recorded


async def test_an_expired_token_is_refused(
    sessions: SessionService, store: MemoryStore, clock: FixedClock
) -> None:
    issued = await issue(sessions, store)
    clock.advance(hours=1, seconds=31)  # past the expiry and its leeway
    await assert_refused(sessions, issued.token)
    assert await sessions.live_sessions(ACCOUNT) == []


@pytest.mark.parametrize("token", ["", "not-a-jwt", "a.b.c"])
async def test_a_token_that_is_not_ours_is_refused(sessions: SessionService, token: str) -> None:
    await assert_refused(sessions, token)


async def test_an_altered_token_is_refused(sessions: SessionService, store: MemoryStore) -> None:
    token = (await issue(sessions, store)).token
    head, payload, signature = token.split(".")
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    await assert_refused(sessions, f"{head}.{payload}.{flipped}")


# -- ending ---------------------------------------------------------------------------------


async def test_a_revoked_session_is_refused_at_once_and_audited(
    sessions: SessionService, store: MemoryStore, channel: LocalRevocations, clock: FixedClock
) -> None:
    announced: list[Sequence[str]] = []
    channel.subscribe(announced.append)
    issued = await issue(sessions, store)
    await sessions.verify(issued.token)  # now trusted as live for a moment
    assert await sessions.revoke(ACCOUNT, issued.session_id, client=CLIENT, provider="google")
    await assert_refused(sessions, issued.token)
    assert announced == [[issued.session_id]]
    record = await store.sessions.get(issued.session_id)
    assert record is not None and record.revoked_at == clock.now()
    [event] = await store.events.for_account(ACCOUNT)
    assert event.outcome is Outcome.SESSION_REVOKED and event.client_address == CLIENT.address
    # Ended already: nothing more to end, nothing more audited or announced.
    assert not await sessions.revoke(ACCOUNT, issued.session_id, client=CLIENT, provider="google")
    assert len(await store.events.for_account(ACCOUNT)) == 1 and len(announced) == 1


async def test_another_accounts_session_is_not_revoked(
    sessions: SessionService, store: MemoryStore
) -> None:
    theirs = await issue(sessions, store, "account-2")
    assert not await sessions.revoke(ACCOUNT, theirs.session_id, client=CLIENT, provider="google")
    await sessions.verify(theirs.token)
    assert await store.events.recent() == []


async def test_a_revocation_reaches_the_other_instances_at_once(
    sessions: SessionService, other_instance_sessions: SessionService, store: MemoryStore
) -> None:
    issued = await issue(sessions, store)
    await other_instance_sessions.verify(issued.token)  # the other instance trusts it a moment
    await sessions.revoke(ACCOUNT, issued.session_id, client=CLIENT, provider="google")
    await assert_refused(other_instance_sessions, issued.token)


async def test_revoke_all_but_one_keeps_only_that_one(
    sessions: SessionService, store: MemoryStore
) -> None:
    first, kept, third = [await issue(sessions, store) for _ in range(3)]
    theirs = await issue(sessions, store, "account-2")
    ended = await sessions.revoke_all(
        ACCOUNT, client=CLIENT, provider="google", keep=kept.session_id
    )
    assert sorted(ended) == sorted([first.session_id, third.session_id])
    assert [r.id for r in await sessions.live_sessions(ACCOUNT)] == [kept.session_id]
    await sessions.verify(kept.token)
    await sessions.verify(theirs.token)
    for gone in (first, third):
        await assert_refused(sessions, gone.token)
    [event] = await store.events.for_account(ACCOUNT)
    assert event.outcome is Outcome.SIGNED_OUT_EVERYWHERE and event.detail == "2 sessions"


async def test_revoke_all_ends_every_session(sessions: SessionService, store: MemoryStore) -> None:
    issued = [await issue(sessions, store) for _ in range(2)]
    ended = await sessions.revoke_all(ACCOUNT, client=CLIENT, provider="google")
    assert sorted(ended) == sorted(i.session_id for i in issued)
    assert await sessions.live_sessions(ACCOUNT) == []


async def test_sign_out_ends_the_tokens_own_session_only(
    sessions: SessionService, store: MemoryStore
) -> None:
    mine, other = await issue(sessions, store), await issue(sessions, store)
    assert await sessions.sign_out(mine.token, client=CLIENT) == [mine.session_id]
    await assert_refused(sessions, mine.token)
    await sessions.verify(other.token)
    assert (await store.events.recent(1))[0].outcome is Outcome.SIGNED_OUT
    # only a live session signs anything out: an ended one, or no token, is refused
    with pytest.raises(InvalidSession):
        await sessions.sign_out(mine.token, client=CLIENT)
    with pytest.raises(InvalidSession):
        await sessions.sign_out("not-a-token", client=CLIENT)


async def test_sign_out_everywhere_needs_a_recent_authentication(
    sessions: SessionService, store: MemoryStore, clock: FixedClock
) -> None:
    mine, other = await issue(sessions, store), await issue(sessions, store)
    clock.advance(minutes=11)
    with pytest.raises(errors.ReauthenticationRequired):
        await sessions.sign_out(mine.token, client=CLIENT, everywhere=True)
    assert len(await sessions.live_sessions(ACCOUNT)) == 2
    fresh = await issue(sessions, store)
    ended = await sessions.sign_out(fresh.token, client=CLIENT, everywhere=True)
    assert sorted(ended) == sorted([mine.session_id, other.session_id, fresh.session_id])


# -- renewal ----------------------------------------------------------------------------------


async def test_a_session_used_before_half_its_lifetime_is_not_renewed(
    sessions: SessionService, store: MemoryStore, clock: FixedClock
) -> None:
    issued = await issue(sessions, store)
    clock.advance(minutes=29)
    assert await sessions.renew_if_due(await sessions.verify(issued.token)) is None


async def test_a_session_used_after_half_its_lifetime_gets_a_new_token(
    sessions: SessionService, store: MemoryStore, clock: FixedClock
) -> None:
    issued = await issue(sessions, store)
    first = await sessions.verify(issued.token)
    clock.advance(minutes=31)
    renewed = await sessions.renew_if_due(await sessions.verify(issued.token))
    assert renewed is not None
    assert renewed.session_id == issued.session_id
    assert renewed.expires_at == clock.now() + dt.timedelta(hours=1)
    claims = await sessions.verify(renewed.token)
    assert (claims.session_id, claims.auth_time) == (first.session_id, first.auth_time)
    record = await store.sessions.get(issued.session_id)
    assert record is not None and record.expires_at == renewed.expires_at
    await sessions.verify(issued.token)  # the older token stays valid until it expires


async def test_renewal_stops_at_the_absolute_limit(
    sessions: SessionService, store: MemoryStore, clock: FixedClock
) -> None:
    start = clock.now()
    token = (await issue(sessions, store)).token
    for _ in range(6):
        clock.advance(minutes=35)
        renewed = await sessions.renew_if_due(await sessions.verify(token))
        if renewed is None:
            break
        token = renewed.token
    assert renewed is None  # at the limit: not renewed again
    claims = await sessions.verify(token)
    assert claims.expires_at == start + dt.timedelta(hours=3)  # the absolute limit, not beyond
    clock.at = start + dt.timedelta(hours=3, seconds=31)
    await assert_refused(sessions, token)


@pytest.mark.parametrize("sliding", [False])
async def test_no_renewal_when_sessions_do_not_slide(
    sessions: SessionService, store: MemoryStore, clock: FixedClock
) -> None:
    issued = await issue(sessions, store)
    clock.advance(minutes=45)
    assert await sessions.renew_if_due(await sessions.verify(issued.token)) is None


async def test_a_revoked_session_is_not_renewed(
    sessions: SessionService, store: MemoryStore, clock: FixedClock
) -> None:
    issued = await issue(sessions, store)
    claims = await sessions.verify(issued.token)
    clock.advance(minutes=45)
    await sessions.revoke(ACCOUNT, issued.session_id, client=CLIENT, provider="google")
    assert await sessions.renew_if_due(claims) is None


# -- the window of a recent authentication -----------------------------------------------------


async def test_a_recent_authentication_is_one_within_the_window(
    sessions: SessionService, clock: FixedClock
) -> None:
    sessions.require_recent_authentication(clock.now())
    sessions.require_recent_authentication(clock.now() - dt.timedelta(minutes=10))
    for stale in (clock.now() - dt.timedelta(minutes=10, seconds=1), None):
        with pytest.raises(errors.ReauthenticationRequired) as refused:
            sessions.require_recent_authentication(stale)
        assert refused.value.max_age == 600
