"""Completing a sign-in: the pending state taken once by its browser, the account step of each
intent, the refusals, and what every outcome leaves behind (an audit event, a session)."""

from __future__ import annotations

import asyncio
import datetime as dt

import attrs
import pytest

from authgate.domain import errors
from authgate.domain.model import (
    Intent,
    Outcome,
    ProviderIdentity,
    SignedIn,
    SignInEvent,
)
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from authgate.services.sessions import SessionService
from authgate.services.signin import SignInService
from tests.services.conftest import APP_URL, BINDING, CLIENT, SignIns
from tests.services.fakes import FakeProvider, FixedClock
from tests.support.records import verified
from tests.support.stores import MemoryStore

ALICE = verified("google", "alice")


async def outcomes(store: MemoryStore) -> list[Outcome]:
    """The audited outcomes, oldest first."""
    return [e.outcome for e in reversed(await store.events.recent())]


async def last_event(store: MemoryStore) -> SignInEvent:
    return (await store.events.recent(1))[0]


async def assert_no_session_issued(store: MemoryStore) -> None:
    for account_id in list(store.accounts.snapshot()[0]):
        assert await store.sessions.for_account(account_id) == []


# -- the pending state --------------------------------------------------------------------------


async def test_a_state_is_taken_once(flow: SignIns) -> None:
    started = await flow.start(intent=Intent.REGISTER)
    await flow.complete(started, ALICE)
    with pytest.raises(errors.InvalidState):
        await flow.complete(started, ALICE)


async def test_a_state_expires(flow: SignIns, clock: FixedClock) -> None:
    started = await flow.start(intent=Intent.REGISTER)
    clock.advance(minutes=10, seconds=1)
    with pytest.raises(errors.InvalidState):
        await flow.complete(started, ALICE)


async def test_another_browser_cannot_complete_nor_spoil_a_sign_in(flow: SignIns) -> None:
    started = await flow.start(intent=Intent.REGISTER)
    with pytest.raises(errors.InvalidState):
        await flow.complete(started, ALICE, binding="another-browser")
    with pytest.raises(errors.InvalidState):
        await flow.complete(started, ALICE, binding=None)
    assert (await flow.complete(started, ALICE)).outcome is Outcome.REGISTERED


async def test_a_state_belongs_to_the_provider_it_was_started_with(
    flow: SignIns, signin: SignInService, providers: dict[str, FakeProvider]
) -> None:
    started = await flow.start("google", intent=Intent.REGISTER)
    code = providers["facebook"].code_for(verified("facebook", "alice"))
    with pytest.raises(errors.InvalidState):
        await signin.complete(
            "facebook", code=code, state=started.state, binding=BINDING, client=CLIENT
        )
    assert (await flow.complete(started, ALICE)).outcome is Outcome.REGISTERED


async def test_the_exchange_gets_what_the_start_stored(
    flow: SignIns, providers: dict[str, FakeProvider]
) -> None:
    await flow.sign_in(ALICE, intent=Intent.REGISTER)
    asked, exchanged = providers["google"].authorizations[-1], providers["google"].exchanges[-1]
    assert exchanged["redirect_uri"] == asked["redirect_uri"]
    assert exchanged["nonce"] == asked["nonce"]
    assert exchanged["verifier"] is not None


async def test_missing_code_or_state_is_an_invalid_request(
    flow: SignIns, signin: SignInService
) -> None:
    started = await flow.start()
    with pytest.raises(errors.InvalidRequest, match="code"):
        await signin.complete(
            "google", code=None, state=started.state, binding=BINDING, client=CLIENT
        )
    with pytest.raises(errors.InvalidRequest, match="state"):
        await signin.complete("google", code="c", state=None, binding=BINDING, client=CLIENT)


# -- the provider's refusals --------------------------------------------------------------------


@pytest.mark.parametrize("error", ["access_denied", "user_cancelled_authorize"])
async def test_a_denial_is_audited_and_spends_the_state(
    flow: SignIns, store: MemoryStore, error: str
) -> None:
    started = await flow.start()
    with pytest.raises(errors.AccessDenied):
        await flow.complete(started, error=error)
    event = await last_event(store)
    assert event.outcome is Outcome.DENIED and event.detail == error
    assert event.client_address == CLIENT.address and event.user_agent == CLIENT.user_agent
    with pytest.raises(errors.InvalidState):
        await flow.complete(started, ALICE)


async def test_a_denial_from_another_browser_spends_nothing(flow: SignIns) -> None:
    started = await flow.start(intent=Intent.REGISTER)
    with pytest.raises(errors.AccessDenied):
        await flow.complete(started, error="access_denied", binding="another-browser")
    assert (await flow.complete(started, ALICE)).outcome is Outcome.REGISTERED


async def test_another_provider_error_is_a_provider_error(
    flow: SignIns, store: MemoryStore
) -> None:
    with pytest.raises(errors.ProviderError):
        await flow.complete(await flow.start(), error="server_error")
    assert await outcomes(store) == [Outcome.FAILED]


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (ExchangeFailed("token endpoint down"), "token_exchange_failed"),
        (VerificationFailed("bad signature"), "invalid_id_token"),
    ],
)
async def test_a_failed_exchange_signs_nobody_in(
    flow: SignIns,
    store: MemoryStore,
    providers: dict[str, FakeProvider],
    failure: Exception,
    reason: str,
) -> None:
    providers["google"].fail = failure
    with pytest.raises(errors.AuthenticationFailed) as refused:
        await flow.sign_in(ALICE, intent=Intent.REGISTER)
    assert refused.value.reason == reason
    assert await store.accounts.find_by_identity(ALICE.identity) is None
    event = await last_event(store)
    assert event.outcome is Outcome.FAILED and event.detail == reason


async def test_a_response_from_another_issuer_is_refused_before_the_code_is_sent(
    flow: SignIns, providers: dict[str, FakeProvider]
) -> None:
    started = await flow.start(intent=Intent.REGISTER)
    with pytest.raises(errors.AuthenticationFailed) as refused:
        await flow.complete(started, ALICE, iss="https://apple.idp.example")
    assert refused.value.reason == "invalid_issuer"
    assert providers["google"].exchanges == []


async def test_an_address_the_provider_says_is_unverified_is_refused(
    flow: SignIns, store: MemoryStore
) -> None:
    with pytest.raises(errors.AuthenticationFailed) as refused:
        await flow.sign_in(attrs.evolve(ALICE, email_verified=False), intent=Intent.REGISTER)
    assert refused.value.reason == "email_not_verified"
    assert await store.accounts.find_by_identity(ALICE.identity) is None


@pytest.mark.parametrize("subject", ["", "with\nnewline"])
async def test_a_subject_empty_or_with_control_characters_is_refused(
    flow: SignIns, store: MemoryStore, subject: str
) -> None:
    identity = verified("google", subject)
    with pytest.raises(errors.AuthenticationFailed) as refused:
        await flow.sign_in(identity, intent=Intent.REGISTER)
    assert refused.value.reason == "invalid_id_token"
    assert await store.accounts.find_by_identity(identity.identity) is None


# -- registration and login ---------------------------------------------------------------------


async def test_a_registration_creates_the_account_and_signs_it_in(
    flow: SignIns, store: MemoryStore, sessions: SessionService, clock: FixedClock
) -> None:
    signed_in = await flow.sign_in(ALICE, intent=Intent.REGISTER)
    assert signed_in.outcome is Outcome.REGISTERED and signed_in.first_time
    assert signed_in.destination == f"{APP_URL}/onboarding"
    account = await store.accounts.find_by_identity(ALICE.identity)
    assert account is not None and account.id == signed_in.account.id
    assert account.email == ALICE.email and account.email_verified
    assert account.created_at == clock.now() and account.last_login_at == clock.now()
    [identity] = await store.accounts.list_identities(account.id)
    assert identity.identity == ALICE.identity and identity.is_primary
    event = await last_event(store)
    assert (event.outcome, event.account_id, event.provider) == (
        Outcome.REGISTERED,
        account.id,
        "google",
    )
    await assert_session_issued(signed_in, sessions, store)


async def assert_session_issued(
    signed_in: SignedIn, sessions: SessionService, store: MemoryStore
) -> None:
    """The session of ``signed_in`` verifies, is live and recorded with the sign-in's client."""
    claims = await sessions.verify(signed_in.session.token)
    assert claims.account_id == signed_in.account.id and claims.provider == signed_in.provider
    assert claims.session_id == signed_in.session.session_id
    [live] = await sessions.live_sessions(signed_in.account.id)
    assert live.id == signed_in.session.session_id
    assert (live.client_address, live.user_agent) == (CLIENT.address, CLIENT.user_agent)
    assert live.expires_at == signed_in.session.expires_at
    assert signed_in.session_max_age == 3600


async def test_registering_an_identity_that_has_an_account_signs_in_to_it(
    flow: SignIns, store: MemoryStore
) -> None:
    first = await flow.sign_in(ALICE, intent=Intent.REGISTER)
    again = await flow.sign_in(ALICE, intent=Intent.REGISTER)
    assert again.outcome is Outcome.SIGNED_IN and not again.first_time
    assert again.account.id == first.account.id
    assert len(store.accounts.snapshot()[0]) == 1


async def test_a_login_signs_in_to_the_account_holding_the_identity(
    flow: SignIns, store: MemoryStore, sessions: SessionService, clock: FixedClock
) -> None:
    registered = await flow.sign_in(ALICE, intent=Intent.REGISTER)
    clock.advance(minutes=5)
    signed_in = await flow.sign_in(ALICE)
    assert signed_in.outcome is Outcome.SIGNED_IN and not signed_in.first_time
    assert signed_in.account.id == registered.account.id
    assert signed_in.destination == f"{APP_URL}/dashboard"
    account = await store.accounts.get(registered.account.id)
    assert account is not None and account.last_login_at == clock.now()
    event = await last_event(store)
    assert (event.outcome, event.account_id) == (Outcome.SIGNED_IN, registered.account.id)
    claims = await sessions.verify(signed_in.session.token)
    assert claims.account_id == registered.account.id
    assert len(await sessions.live_sessions(registered.account.id)) == 2


async def test_a_login_goes_back_where_the_user_started(flow: SignIns) -> None:
    await flow.sign_in(ALICE, intent=Intent.REGISTER)
    signed_in = await flow.sign_in(ALICE, return_to="/billing")
    assert signed_in.destination == f"{APP_URL}/billing"


async def test_a_login_with_an_unknown_identity_creates_nothing(
    flow: SignIns, store: MemoryStore
) -> None:
    with pytest.raises(errors.AccountNotFound):
        await flow.sign_in(ALICE)
    assert store.accounts.snapshot() == ({}, {})
    event = await last_event(store)
    assert event.outcome is Outcome.ACCOUNT_NOT_FOUND and event.account_id is None


async def test_the_provider_session_is_kept_with_the_session(
    flow: SignIns, sessions: SessionService
) -> None:
    signed_in = await flow.sign_in(
        attrs.evolve(ALICE, provider_session="idp-sid-1"), intent=Intent.REGISTER
    )
    [live] = await sessions.live_sessions(signed_in.account.id)
    assert live.provider_session == "idp-sid-1"


async def test_a_disabled_identity_cannot_sign_in(
    flow: SignIns, store: MemoryStore, sessions: SessionService
) -> None:
    registered = await flow.sign_in(ALICE, intent=Intent.REGISTER)
    await store.accounts.set_identity_disabled(ALICE.identity, "hijacking")
    for intent in (Intent.LOGIN, Intent.REGISTER):
        with pytest.raises(errors.IdentityDisabled):
            await flow.sign_in(ALICE, intent=intent)
    assert len(await sessions.live_sessions(registered.account.id)) == 1  # the first only
    event = await last_event(store)
    assert event.outcome is Outcome.FAILED and event.account_id is None
    await store.accounts.set_identity_disabled(ALICE.identity, None)
    assert (await flow.sign_in(ALICE)).outcome is Outcome.SIGNED_IN


# -- link ---------------------------------------------------------------------------------------


async def test_link_adds_the_identity_to_the_callers_account(
    flow: SignIns, store: MemoryStore, sessions: SessionService
) -> None:
    alice = await flow.caller(await flow.sign_in(ALICE, intent=Intent.REGISTER))
    apple = verified("apple", "alice-at-apple")
    linked = await flow.sign_in(apple, intent=Intent.LINK, caller=alice)
    assert linked.outcome is Outcome.LINKED and linked.account.id == alice.account_id
    identities = await store.accounts.list_identities(alice.account_id)
    assert [(i.identity, i.is_primary) for i in identities] == [
        (ALICE.identity, True),
        (apple.identity, False),
    ]
    assert (await last_event(store)).outcome is Outcome.LINKED
    assert (await flow.sign_in(apple)).account.id == alice.account_id  # signs in now
    await sessions.verify(linked.session.token)


async def test_an_identity_held_by_another_account_is_not_linked(
    flow: SignIns, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.sign_in(ALICE, intent=Intent.REGISTER))
    bob = await flow.register("bob", "apple")
    with pytest.raises(errors.IdentityLinkedElsewhere):
        await flow.sign_in(verified("apple", "bob"), intent=Intent.LINK, caller=alice)
    assert [i.identity.subject for i in await store.accounts.list_identities(alice.account_id)] == [
        "alice"
    ]
    assert [i.identity.subject for i in await store.accounts.list_identities(bob.account.id)] == [
        "bob"
    ]
    assert len(await store.sessions.for_account(alice.account_id)) == 1


async def test_linking_to_an_account_deleted_meanwhile_finds_no_account(
    flow: SignIns, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.sign_in(ALICE, intent=Intent.REGISTER))
    started = await flow.start("apple", intent=Intent.LINK, caller=alice)
    await store.accounts.delete(alice.account_id)
    with pytest.raises(errors.AccountNotFound):
        await flow.complete(started, verified("apple", "alice-at-apple"))
    assert (
        await store.accounts.find_by_identity(ProviderIdentity("apple", "alice-at-apple")) is None
    )


# -- reauthenticate ------------------------------------------------------------------------------


async def test_reauthenticate_signs_in_the_caller_again(
    flow: SignIns, store: MemoryStore, sessions: SessionService, clock: FixedClock
) -> None:
    alice = await flow.caller(await flow.sign_in(ALICE, intent=Intent.REGISTER))
    clock.advance(minutes=30)
    again = await flow.sign_in(ALICE, intent=Intent.REAUTHENTICATE, caller=alice)
    assert again.outcome is Outcome.REAUTHENTICATED and again.account.id == alice.account_id
    assert (await last_event(store)).outcome is Outcome.REAUTHENTICATED
    claims = await sessions.verify(again.session.token)
    sessions.require_recent_authentication(claims.auth_time)  # fresh enough for changes


async def test_reauthenticate_with_another_users_identity_is_refused(
    flow: SignIns, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.sign_in(ALICE, intent=Intent.REGISTER))
    await flow.register("bob")
    for someone_else in (verified("google", "bob"), verified("google", "nobody")):
        with pytest.raises(errors.ReauthenticationRefused) as refused:
            await flow.sign_in(someone_else, intent=Intent.REAUTHENTICATE, caller=alice)
        assert refused.value.reason == "reauthentication_identity_mismatch"
    assert len(await store.sessions.for_account(alice.account_id)) == 1
    assert await store.accounts.find_by_identity(ProviderIdentity("google", "nobody")) is None


async def test_reauthenticate_refuses_a_provider_authentication_older_than_the_request(
    flow: SignIns, clock: FixedClock
) -> None:
    alice = await flow.caller(await flow.sign_in(ALICE, intent=Intent.REGISTER))
    clock.advance(minutes=30)  # the session (an hour) still lives: only the provider is stale
    stale = attrs.evolve(ALICE, auth_time=clock.now() - dt.timedelta(minutes=5))
    with pytest.raises(errors.ReauthenticationRefused) as refused:
        await flow.sign_in(stale, intent=Intent.REAUTHENTICATE, caller=alice)
    assert refused.value.reason == "stale_provider_authentication"


async def test_reauthenticate_through_a_disabled_identity_is_refused(
    flow: SignIns, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.sign_in(ALICE, intent=Intent.REGISTER))
    await store.accounts.set_identity_disabled(ALICE.identity, "hijacking")
    with pytest.raises(errors.IdentityDisabled):
        await flow.sign_in(ALICE, intent=Intent.REAUTHENTICATE, caller=alice)


async def test_concurrent_first_sign_ins_of_one_identity_create_one_account(
    flow: SignIns, store: MemoryStore
) -> None:
    started = [await flow.start(intent=Intent.REGISTER) for _ in range(10)]
    done = await asyncio.gather(*(flow.complete(s, ALICE) for s in started))
    assert len({d.account.id for d in done}) == 1
    assert [d.outcome for d in done].count(Outcome.REGISTERED) == 1
    assert len(store.accounts.snapshot()[0]) == 1
