"""The caller's account: reading it, unlinking a provider (never the last), ending sessions,
deleting it and exporting everything stored about it."""

from __future__ import annotations

import pytest

from authgate.domain import errors
from authgate.domain.model import Caller, Intent, Outcome, SignedIn
from authgate.ports.session_tokens import InvalidSession
from authgate.services.account import AccountService
from authgate.services.sessions import SessionService
from tests.services.conftest import SignIns
from tests.services.fakes import FixedClock
from tests.support.records import verified
from tests.support.stores import MemoryStore


async def alice_with_apple(flow: SignIns) -> tuple[Caller, SignedIn]:
    """Alice registered with Google, then linked Apple; the caller is her Google session, the
    second value her sign-in with Apple."""
    alice = await flow.caller(await flow.register("alice"))
    await flow.sign_in(verified("apple", "alice-apple"), intent=Intent.LINK, caller=alice)
    with_apple = await flow.sign_in(verified("apple", "alice-apple"))
    return alice, with_apple


async def test_the_account_and_its_links(flow: SignIns, account: AccountService) -> None:
    alice, _ = await alice_with_apple(flow)
    view = await account.account(alice.account_id)
    assert view.account.id == alice.account_id and view.account.email == "alice@google.example"
    assert [i.identity.provider for i in view.identities] == ["google", "apple"]
    links = await account.linked_providers(alice.account_id)
    assert [i.identity.provider for i in links] == ["google", "apple"]
    assert await account.linked_providers("nobody") == []
    with pytest.raises(errors.AccountGone):
        await account.account("nobody")


# -- unlink -----------------------------------------------------------------------------------


async def test_unlink_removes_the_provider_and_the_sessions_issued_through_it(
    flow: SignIns, account: AccountService, sessions: SessionService, store: MemoryStore
) -> None:
    alice, with_apple = await alice_with_apple(flow)
    remaining = await account.unlink(alice, "apple")
    assert [i.identity.provider for i in remaining] == ["google"]
    assert [i.identity.provider for i in await account.linked_providers(alice.account_id)] == [
        "google"
    ]
    with pytest.raises(InvalidSession):
        await sessions.verify(with_apple.session.token)
    assert [r.id for r in await sessions.live_sessions(alice.account_id)] == [alice.session_id]
    event = (await store.events.for_account(alice.account_id))[0]
    assert (event.outcome, event.provider) == (Outcome.UNLINKED, "apple")
    with pytest.raises(errors.AccountNotFound):  # the identity signs nobody in any more
        await flow.sign_in(verified("apple", "alice-apple"))


async def test_unlink_keeps_the_callers_own_session(
    flow: SignIns, account: AccountService, sessions: SessionService
) -> None:
    _, with_apple = await alice_with_apple(flow)
    through_apple = await flow.caller(with_apple)
    await account.unlink(through_apple, "apple")
    await sessions.verify(with_apple.session.token)


async def test_the_last_provider_is_never_unlinked(
    flow: SignIns, account: AccountService, sessions: SessionService, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    with pytest.raises(errors.LastIdentity):
        await account.unlink(alice, "google")
    assert [i.identity.provider for i in await account.linked_providers(alice.account_id)] == [
        "google"
    ]
    assert len(await sessions.live_sessions(alice.account_id)) == 1
    assert [e.outcome for e in await store.events.for_account(alice.account_id)] == [
        Outcome.REGISTERED
    ]


async def test_unlink_of_a_provider_not_held_or_not_known(
    flow: SignIns, account: AccountService
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    with pytest.raises(errors.IdentityNotLinked):
        await account.unlink(alice, "facebook")
    with pytest.raises(errors.InvalidProvider):
        await account.unlink(alice, "github")


async def test_unlink_needs_a_recent_authentication(
    flow: SignIns, account: AccountService, clock: FixedClock
) -> None:
    alice, _ = await alice_with_apple(flow)
    clock.advance(minutes=11)
    with pytest.raises(errors.ReauthenticationRequired):
        await account.unlink(alice, "apple")
    assert len(await account.linked_providers(alice.account_id)) == 2
    again = await flow.sign_in(
        verified("google", "alice"), intent=Intent.REAUTHENTICATE, caller=alice
    )
    await account.unlink(await flow.caller(again), "apple")
    assert len(await account.linked_providers(alice.account_id)) == 1


# -- sessions of the account ------------------------------------------------------------------


async def test_ending_another_session_needs_a_recent_authentication_but_not_ones_own(
    flow: SignIns, account: AccountService, sessions: SessionService, clock: FixedClock
) -> None:
    alice, with_apple = await alice_with_apple(flow)
    clock.advance(minutes=11)
    with pytest.raises(errors.ReauthenticationRequired):
        await account.end_session(alice, with_apple.session.session_id)
    await account.end_session(alice, alice.session_id)
    live = {r.id for r in await account.live_sessions(alice.account_id)}
    assert with_apple.session.session_id in live and alice.session_id not in live
    with pytest.raises(errors.SessionNotFound):
        await account.end_session(alice, alice.session_id)


async def test_end_other_sessions_keeps_the_callers(
    flow: SignIns, account: AccountService, sessions: SessionService
) -> None:
    alice, with_apple = await alice_with_apple(flow)
    ended = await account.end_other_sessions(alice)
    assert with_apple.session.session_id in ended and alice.session_id not in ended
    assert [r.id for r in await account.live_sessions(alice.account_id)] == [alice.session_id]


# -- delete and export ------------------------------------------------------------------------


async def test_delete_removes_the_account_its_identities_and_sessions(
    flow: SignIns, account: AccountService, sessions: SessionService, store: MemoryStore
) -> None:
    alice, with_apple = await alice_with_apple(flow)
    await account.delete(alice)
    assert await store.accounts.get(alice.account_id) is None
    assert await store.accounts.list_identities(alice.account_id) == []
    assert await sessions.live_sessions(alice.account_id) == []
    with pytest.raises(InvalidSession):
        await sessions.verify(with_apple.session.token)
    event = (await store.events.for_account(alice.account_id))[0]
    assert event.outcome is Outcome.ACCOUNT_DELETED
    assert "alice" not in repr(event)  # no email or name in the audit trail
    with pytest.raises(errors.AccountGone):
        await account.delete(alice)
    with pytest.raises(errors.AccountNotFound):
        await flow.sign_in(verified("google", "alice"))
    again = await flow.register("alice")  # the same identity is a new user now
    assert again.outcome is Outcome.REGISTERED and again.account.id != alice.account_id


async def test_delete_needs_a_recent_authentication(
    flow: SignIns, account: AccountService, clock: FixedClock, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    clock.advance(minutes=11)
    with pytest.raises(errors.ReauthenticationRequired):
        await account.delete(alice)
    assert await store.accounts.get(alice.account_id) is not None


async def test_export_holds_the_account_its_sessions_and_events(
    flow: SignIns, account: AccountService, sessions: SessionService
) -> None:
    alice, with_apple = await alice_with_apple(flow)
    await sessions.revoke(
        alice.account_id, with_apple.session.session_id, client=alice.client, provider="apple"
    )
    exported = await account.export(alice)
    assert exported.view.account.id == alice.account_id
    assert [i.identity.provider for i in exported.view.identities] == ["google", "apple"]
    assert {s.id for s in exported.sessions} >= {alice.session_id, with_apple.session.session_id}
    assert any(s.revoked_at is not None for s in exported.sessions)  # revoked ones too
    assert [e.outcome for e in exported.events] == [
        Outcome.SESSION_REVOKED,
        Outcome.SIGNED_IN,
        Outcome.LINKED,
        Outcome.REGISTERED,
    ]


async def test_export_needs_a_recent_authentication(
    flow: SignIns, account: AccountService, clock: FixedClock
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    clock.advance(minutes=11)
    with pytest.raises(errors.ReauthenticationRequired):
        await account.export(alice)
