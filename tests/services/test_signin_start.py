"""Starting a sign-in: what is stored for the callback, and what is refused before anything is."""

from __future__ import annotations

import datetime as dt

import pytest

from authgate.domain import errors
from authgate.domain.model import Intent
from authgate.domain.secrets import binding_hash, pkce_challenge
from authgate.services.signin import SignInService
from tests.services.conftest import APP_URL, BINDING, SignIns, callback_url
from tests.services.fakes import FakeProvider, FixedClock
from tests.support.stores import MemoryStore

FAR = dt.timedelta(days=365)


async def stored_count(store: MemoryStore, clock: FixedClock) -> int:
    """How many pending sign-ins the store holds (each one expires within a year)."""
    return await store.states.purge_expired(clock.now() + FAR)


async def test_start_stores_the_pending_sign_in_the_callback_needs(
    flow: SignIns, store: MemoryStore, providers: dict[str, FakeProvider], clock: FixedClock
) -> None:
    started = await flow.start("google", return_to="/settings?tab=1")
    asked = providers["google"].authorizations[-1]
    assert asked["state"] == started.state and asked["redirect_uri"] == callback_url("google")
    assert not asked["reauthenticate"]
    assert started.client_id == "client-google" and started.response_type == "code"
    assert started.state_max_age == 600

    pending = await store.states.take("google", started.state, binding_hash(BINDING), clock.now())
    assert pending is not None
    assert pending.intent is Intent.LOGIN and pending.account_id is None
    assert pending.redirect_uri == callback_url("google")
    assert pending.code_verifier is not None
    assert asked["code_challenge"] == pkce_challenge(pending.code_verifier)
    assert pending.nonce is not None and asked["nonce"] == pending.nonce
    assert pending.binding_hash == binding_hash(BINDING)  # the cookie's hash, never its value
    assert pending.expires_at == clock.now() + dt.timedelta(minutes=10)
    assert pending.return_to == f"{APP_URL}/settings?tab=1"


async def test_a_provider_without_nonces_gets_none(
    flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    started = await flow.start("facebook")
    pending = await store.states.take("facebook", started.state, binding_hash(BINDING), clock.now())
    assert pending is not None and pending.nonce is None


async def test_a_return_address_off_the_app_is_dropped(
    flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    started = await flow.start(return_to="https://evil.example/steal")
    pending = await store.states.take("google", started.state, binding_hash(BINDING), clock.now())
    assert pending is not None and pending.return_to is None


async def test_an_unknown_provider_is_refused_naming_the_configured_ones(
    signin: SignInService, store: MemoryStore, clock: FixedClock
) -> None:
    with pytest.raises(errors.InvalidProvider) as refused:
        await signin.start("github", redirect_uri=callback_url("github"), binding=BINDING)
    assert "google, apple, facebook" in str(refused.value)
    assert await stored_count(store, clock) == 0


@pytest.mark.parametrize(
    "redirect_uri",
    [
        callback_url("google") + "/",
        callback_url("google") + "?x=1",
        callback_url("google").upper(),
        callback_url("apple"),  # another provider's address
        "https://evil.example/callback",
    ],
)
async def test_redirect_uri_must_be_one_configured_for_the_provider(
    signin: SignInService, store: MemoryStore, clock: FixedClock, redirect_uri: str
) -> None:
    with pytest.raises(errors.InvalidRequest, match="redirect_uri"):
        await signin.start("google", redirect_uri=redirect_uri, binding=BINDING)
    assert await stored_count(store, clock) == 0


async def test_redirect_uri_is_required(
    signin: SignInService, store: MemoryStore, clock: FixedClock
) -> None:
    with pytest.raises(errors.MissingParameter, match="redirect_uri"):
        await signin.start("google", redirect_uri=None, binding=BINDING)
    assert await stored_count(store, clock) == 0


async def test_a_state_chosen_by_the_caller_is_kept_and_one_is_made_otherwise(
    flow: SignIns,
) -> None:
    assert (await flow.start(state="my-own-state")).state == "my-own-state"
    first, second = (await flow.start()).state, (await flow.start()).state
    assert first != second and len(first) >= 43


@pytest.mark.parametrize("state", ["x" * 513, "bad\nstate", "tab\there", "nul\x00"])
async def test_a_state_too_long_or_with_control_characters_is_refused(
    flow: SignIns, store: MemoryStore, clock: FixedClock, state: str
) -> None:
    with pytest.raises(errors.InvalidRequest, match="state"):
        await flow.start(state=state)
    assert await stored_count(store, clock) == 0


async def test_a_state_of_512_characters_is_accepted(flow: SignIns) -> None:
    assert (await flow.start(state="s" * 512)).state == "s" * 512


async def test_the_same_browser_starting_again_replaces_its_pending_sign_in(
    flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    await flow.start(state="again")
    await flow.start(state="again")
    await flow.start(state="again", binding="another-browser")
    assert await stored_count(store, clock) == 2


@pytest.mark.parametrize("intent", [Intent.LINK, Intent.REAUTHENTICATE])
async def test_link_and_reauthenticate_need_a_signed_in_caller(
    flow: SignIns, store: MemoryStore, clock: FixedClock, intent: Intent
) -> None:
    with pytest.raises(errors.NotAuthenticated):
        await flow.start(intent=intent)
    assert await stored_count(store, clock) == 0


async def test_link_remembers_the_caller(
    flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    caller = await flow.caller(await flow.register("alice"))
    started = await flow.start("apple", intent=Intent.LINK, caller=caller)
    pending = await store.states.take("apple", started.state, binding_hash(BINDING), clock.now())
    assert pending is not None
    assert pending.intent is Intent.LINK and pending.account_id == caller.account_id


async def test_login_and_register_do_not_remember_a_caller(
    flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    caller = await flow.caller(await flow.register("alice"))
    for intent in (Intent.LOGIN, Intent.REGISTER):
        started = await flow.start("apple", intent=intent, caller=caller)
        pending = await store.states.take(
            "apple", started.state, binding_hash(BINDING), clock.now()
        )
        assert pending is not None and pending.account_id is None


async def test_reauthenticate_asks_the_provider_to_authenticate_again(
    flow: SignIns, providers: dict[str, FakeProvider]
) -> None:
    caller = await flow.caller(await flow.register("alice"))
    await flow.start("google", intent=Intent.REAUTHENTICATE, caller=caller)
    assert providers["google"].authorizations[-1]["reauthenticate"] is True


async def test_reauthenticate_with_a_provider_the_account_does_not_hold_is_refused(
    flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    caller = await flow.caller(await flow.register("alice"))
    before = await stored_count(store, clock)
    with pytest.raises(errors.InvalidRequest, match="not linked"):
        await flow.start("apple", intent=Intent.REAUTHENTICATE, caller=caller)
    assert await stored_count(store, clock) == before


@pytest.mark.parametrize("state_capacity", [2])
async def test_a_full_state_store_refuses_for_now_without_evicting_anyone(
    flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    await flow.start(state="one")
    await flow.start(state="two")
    with pytest.raises(errors.TemporarilyUnavailable):
        await flow.start(state="three")
    taken = await store.states.take("google", "one", binding_hash(BINDING), clock.now())
    assert taken is not None
