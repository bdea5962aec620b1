"""Provider events: what a provider's verified event does to its user's account and sessions,
once per event (its ``jti``), and what a token that does not verify does (nothing, audited)."""

from __future__ import annotations

import attrs
import pytest

from authgate.domain import errors
from authgate.domain.model import Caller, Intent, Outcome, ProviderToken, SignedIn
from authgate.ports.provider_events import INVALID_KEY, INVALID_REQUEST, EventTokenRejected
from authgate.ports.session_tokens import InvalidSession
from authgate.services.provider_events import (
    ProviderEventPolicy,
    ProviderEventService,
    Received,
    Shape,
)
from authgate.services.sessions import SessionService
from tests.services.conftest import CLIENT, Deliveries, SignIns
from tests.services.fakes import FakeEventVerifier
from tests.support.records import verified
from tests.support.stores import MemoryStore

ALICE = verified("google", "alice", provider_token=ProviderToken("g-token", "refresh_token"))
ALICE_APPLE = verified("apple", "alice-apple")


@attrs.frozen
class Alice:
    """Alice's account, signed in through Google and through Apple."""

    caller: Caller
    google: SignedIn
    apple: SignedIn


async def alice_signed_in(flow: SignIns) -> Alice:
    google = await flow.sign_in(ALICE, intent=Intent.REGISTER)
    caller = await flow.caller(google)
    await flow.sign_in(ALICE_APPLE, intent=Intent.LINK, caller=caller)
    return Alice(caller, google, await flow.sign_in(ALICE_APPLE))


async def live(sessions: SessionService, signed_in: SignedIn) -> bool:
    try:
        await sessions.verify(signed_in.session.token)
    except InvalidSession:
        return False
    return True


async def last_event(store: MemoryStore) -> tuple[Outcome, str | None, str | None]:
    event = (await store.events.recent(1))[0]
    return event.outcome, event.account_id, event.detail


# -- RISC (Google Cross-Account Protection) ---------------------------------------------------


async def test_sessions_revoked_ends_every_session_of_the_account(
    flow: SignIns, deliver: Deliveries, sessions: SessionService, store: MemoryStore
) -> None:
    alice = await alice_signed_in(flow)
    bob = await flow.register("bob")
    assert await deliver.risc("sessions-revoked", "alice") is Received.APPLIED
    assert await sessions.live_sessions(alice.caller.account_id) == []
    assert not await live(sessions, alice.google) and not await live(sessions, alice.apple)
    assert await live(sessions, bob)
    outcome, account_id, detail = await last_event(store)
    assert (outcome, account_id) == (Outcome.PROVIDER_SIGNED_OUT, alice.caller.account_id)
    assert detail is not None and detail.startswith("sessions-revoked: ")


async def test_an_event_delivered_twice_is_carried_out_once(
    flow: SignIns, deliver: Deliveries, sessions: SessionService, store: MemoryStore
) -> None:
    alice = await alice_signed_in(flow)
    assert await deliver.risc("sessions-revoked", "alice", jti="once") is Received.APPLIED
    again = await flow.sign_in(ALICE)
    audited = len(await store.events.recent())
    assert await deliver.risc("sessions-revoked", "alice", jti="once") is Received.REPLAYED
    assert await live(sessions, again)  # the replay ended nothing
    assert len(await store.events.recent()) == audited
    assert await deliver.risc("sessions-revoked", "alice", jti="another") is Received.APPLIED
    assert await sessions.live_sessions(alice.caller.account_id) == []


async def test_account_disabled_for_hijacking_refuses_sign_ins_until_enabled(
    flow: SignIns, deliver: Deliveries, sessions: SessionService, store: MemoryStore
) -> None:
    alice = await alice_signed_in(flow)
    await deliver.risc("account-disabled", "alice", reason="hijacking")
    identity = await store.accounts.get_identity(ALICE.identity)
    assert identity is not None and identity.disabled_reason == "hijacking"
    # Whoever holds a session may be the attacker: every session ends, Apple's too, and the
    # kept Google token goes to be revoked.
    assert await sessions.live_sessions(alice.caller.account_id) == []
    assert [p.identity.provider for p in await store.revocations.pending()] == ["google"]
    assert await last_event(store) == (
        Outcome.IDENTITY_DISABLED,
        alice.caller.account_id,
        "account-disabled: hijacking",
    )
    with pytest.raises(errors.IdentityDisabled):
        await flow.sign_in(ALICE)
    assert (await flow.sign_in(ALICE_APPLE)).outcome is Outcome.SIGNED_IN  # another identity

    await deliver.risc("account-enabled", "alice")
    identity = await store.accounts.get_identity(ALICE.identity)
    assert identity is not None and identity.disabled_reason is None
    assert (await flow.sign_in(ALICE)).outcome is Outcome.SIGNED_IN


async def test_account_disabled_without_a_reason_ends_that_providers_sessions(
    flow: SignIns, deliver: Deliveries, sessions: SessionService, store: MemoryStore
) -> None:
    alice = await alice_signed_in(flow)
    await deliver.risc("account-disabled", "alice")
    assert not await live(sessions, alice.google)
    assert await live(sessions, alice.apple)
    assert await store.revocations.pending() == []
    with pytest.raises(errors.IdentityDisabled):
        await flow.sign_in(ALICE)


async def test_tokens_revoked_drops_the_kept_token_without_sending_it_back(
    flow: SignIns, deliver: Deliveries, store: MemoryStore
) -> None:
    alice = await alice_signed_in(flow)
    await deliver.risc("tokens-revoked", "alice")
    assert await store.provider_tokens.for_account(alice.caller.account_id) == []
    assert await store.revocations.pending() == []


async def test_an_event_about_an_unknown_user_changes_nothing(
    flow: SignIns, deliver: Deliveries, sessions: SessionService, store: MemoryStore
) -> None:
    alice = await alice_signed_in(flow)
    assert await deliver.risc("sessions-revoked", "stranger") is Received.APPLIED
    assert await live(sessions, alice.google)
    outcome, account_id, detail = await last_event(store)
    assert (outcome, account_id) == (Outcome.PROVIDER_EVENT, None)
    assert detail is not None and "unknown subject" in detail


# -- back-channel logout ----------------------------------------------------------------------


async def test_a_logout_ends_the_sessions_of_that_provider_session_only(
    flow: SignIns, deliver: Deliveries, sessions: SessionService, store: MemoryStore
) -> None:
    registered = await flow.sign_in(
        attrs.evolve(ALICE, provider_session="idp-sid-1"), intent=Intent.REGISTER
    )
    other = await flow.sign_in(attrs.evolve(ALICE, provider_session="idp-sid-2"))
    assert await deliver.logout(sid="idp-sid-1", sub="alice") is Received.APPLIED
    assert not await live(sessions, registered)
    assert await live(sessions, other)
    assert await last_event(store) == (
        Outcome.PROVIDER_SIGNED_OUT,
        registered.account.id,
        "backchannel-logout: 1",
    )


async def test_a_logout_by_sid_alone_finds_the_session(
    flow: SignIns, deliver: Deliveries, sessions: SessionService
) -> None:
    registered = await flow.sign_in(
        attrs.evolve(ALICE, provider_session="idp-sid-1"), intent=Intent.REGISTER
    )
    await deliver.logout(sid="idp-sid-1")
    assert not await live(sessions, registered)


async def test_a_logout_of_a_session_nobody_has_is_audited_only(
    flow: SignIns, deliver: Deliveries, sessions: SessionService, store: MemoryStore
) -> None:
    registered = await flow.sign_in(
        attrs.evolve(ALICE, provider_session="idp-sid-1"), intent=Intent.REGISTER
    )
    assert await deliver.logout(sid="idp-sid-9") is Received.APPLIED
    assert await live(sessions, registered)
    assert await last_event(store) == (
        Outcome.PROVIDER_EVENT,
        None,
        "backchannel-logout: no live session",
    )


async def test_a_logout_of_another_users_session_ends_nothing(
    flow: SignIns, deliver: Deliveries, sessions: SessionService
) -> None:
    registered = await flow.sign_in(
        attrs.evolve(ALICE, provider_session="idp-sid-1"), intent=Intent.REGISTER
    )
    await flow.register("bob")
    await deliver.logout(sid="idp-sid-1", sub="bob")
    assert await live(sessions, registered)


# -- Apple notifications ----------------------------------------------------------------------


async def test_consent_revoked_unlinks_the_identity_when_the_account_has_another(
    flow: SignIns, deliver: Deliveries, sessions: SessionService, store: MemoryStore
) -> None:
    alice = await alice_signed_in(flow)
    assert await deliver.apple("consent-revoked", "alice-apple") is Received.APPLIED
    identities = await store.accounts.list_identities(alice.caller.account_id)
    assert [i.identity.provider for i in identities] == ["google"]
    assert not await live(sessions, alice.apple) and await live(sessions, alice.google)
    outcome, account_id, _ = await last_event(store)
    assert (outcome, account_id) == (Outcome.PROVIDER_UNLINKED, alice.caller.account_id)


async def test_consent_revoked_for_the_only_identity_deletes_the_account(
    flow: SignIns, deliver: Deliveries, store: MemoryStore
) -> None:
    only = await flow.register("alice-apple", "apple")
    await deliver.apple("consent-revoked", "alice-apple")
    assert await store.accounts.get(only.account.id) is None


@pytest.mark.parametrize(
    "event_policy", [ProviderEventPolicy(delete_account_when_last_identity=False)]
)
async def test_consent_revoked_for_the_only_identity_can_keep_the_account_signed_out(
    flow: SignIns, deliver: Deliveries, sessions: SessionService, store: MemoryStore
) -> None:
    only = await flow.register("alice-apple", "apple")
    await deliver.apple("consent-revoked", "alice-apple")
    assert await store.accounts.get(only.account.id) is not None
    assert not await live(sessions, only)
    assert (await last_event(store))[0] is Outcome.PROVIDER_SIGNED_OUT


async def test_a_replayed_apple_notification_changes_nothing(
    flow: SignIns, deliver: Deliveries, store: MemoryStore
) -> None:
    await deliver.apple("consent-revoked", "alice-apple", jti="apple-1")
    again = await flow.register("alice-apple", "apple")
    assert await deliver.apple("consent-revoked", "alice-apple", jti="apple-1") is (
        Received.REPLAYED
    )
    assert await store.accounts.get(again.account.id) is not None


async def test_email_disabled_and_enabled_are_recorded_on_the_identity(
    flow: SignIns, deliver: Deliveries, store: MemoryStore
) -> None:
    await alice_signed_in(flow)
    await deliver.apple("email-disabled", "alice-apple")
    identity = await store.accounts.get_identity(ALICE_APPLE.identity)
    assert identity is not None and identity.email_disabled
    await deliver.apple("email-enabled", "alice-apple")
    identity = await store.accounts.get_identity(ALICE_APPLE.identity)
    assert identity is not None and not identity.email_disabled


# -- refusals ---------------------------------------------------------------------------------


async def test_a_token_that_does_not_verify_is_refused_and_audited(
    flow: SignIns,
    provider_events: ProviderEventService,
    sessions: SessionService,
    store: MemoryStore,
) -> None:
    alice = await alice_signed_in(flow)
    with pytest.raises(EventTokenRejected) as refused:
        await provider_events.receive("google", Shape.RISC, "forged-token", CLIENT)
    assert refused.value.code == INVALID_KEY
    assert await live(sessions, alice.google)
    assert await last_event(store) == (Outcome.PROVIDER_EVENT_REJECTED, None, "risc: invalid_key")


async def test_a_verified_token_not_of_the_receivers_shape_is_an_invalid_request(
    flow: SignIns,
    provider_events: ProviderEventService,
    event_verifiers: dict[str, FakeEventVerifier],
    store: MemoryStore,
) -> None:
    token = event_verifiers["google"].token_for({"jti": "x", "events": "not an object"})
    with pytest.raises(EventTokenRejected) as refused:
        await provider_events.receive("google", Shape.BACKCHANNEL_LOGOUT, token, CLIENT)
    assert refused.value.code == INVALID_REQUEST
    outcome, _, detail = await last_event(store)
    assert (outcome, detail) == (
        Outcome.PROVIDER_EVENT_REJECTED,
        "backchannel_logout: invalid_request",
    )
