"""Passkeys at the service: adding one to the signed-in account, signing in with one (and
stepping up a browser's session with one), listing, renaming and removing them — on the
memory adapters with a relying party that stands in for the WebAuthn ceremonies
(:class:`~tests.services.fakes.FakeRelyingParty`), so what is asserted is the service's own
rules: the challenge, the user handle, the signature counter, a disabled account, the last
sign-in method, the sessions and the audit trail."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import attrs
import pytest

from authgate.adapters.memory import MemoryPasskeyChallenges
from authgate.domain import errors
from authgate.domain.model import Caller, Intent, Outcome, SignInEvent
from authgate.domain.passkeys import Ceremony, Passkey
from authgate.domain.secrets import binding_hash
from authgate.ports.session_tokens import InvalidSession
from authgate.services.passkeys import (
    PASSKEY_PROVIDER,
    PasskeyPolicy,
    PasskeyService,
    PasskeySignedIn,
    remove_passkey_in,
    user_handle,
)
from authgate.services.sessions import SessionService
from authgate.services.signin import SignInPolicy
from tests.services.conftest import APP_URL, BINDING, CLIENT, SignIns
from tests.services.fakes import FakeRelyingParty, FixedClock
from tests.support.records import verified
from tests.support.stores import MemoryStore

T = TypeVar("T")
KEY_1, KEY_2 = b"\x01" * 32, b"\x02" * 32
OTHER_BROWSER = "binding-cookie-of-another-browser-0000000000"
RESUME_URL = "https://auth.example.com/v1/oauth/authorize"


@attrs.define
class RecordingMetrics:
    """``authgate.ports.metrics.Metrics`` that keeps what the service counted."""

    sign_ins: list[tuple[str, str, str]] = attrs.field(factory=list)
    issued: list[str] = attrs.field(factory=list)
    revoked: list[int] = attrs.field(factory=list)
    durations: list[str] = attrs.field(factory=list)

    def sign_in(self, provider: str, outcome: str, reason: str) -> None:
        self.sign_ins.append((provider, outcome, reason))

    def callback_duration(self, provider: str, seconds: float) -> None:
        self.durations.append(provider)

    def initiation_duration(self, provider: str, seconds: float) -> None:
        pass

    def rate_limited(self, limit: Any) -> None:
        pass

    def sessions_issued(self, provider: str) -> None:
        self.issued.append(provider)

    def sessions_revoked(self, count: int) -> None:
        self.revoked.append(count)

    def provider_call(self, provider: str, call: Any, seconds: float, ok: bool) -> None:
        pass


@pytest.fixture
def relying_party() -> FakeRelyingParty:
    return FakeRelyingParty()


@pytest.fixture
def passkey_policy() -> PasskeyPolicy:
    return PasskeyPolicy(
        registration_timeout=dt.timedelta(seconds=90),
        authentication_timeout=dt.timedelta(seconds=120),
    )


@pytest.fixture
def metrics() -> RecordingMetrics:
    return RecordingMetrics()


def passkey_service(
    store: MemoryStore,
    sessions: SessionService,
    clock: FixedClock,
    relying_party: FakeRelyingParty,
    policy: PasskeyPolicy,
    signin: SignInPolicy,
    metrics: RecordingMetrics,
) -> PasskeyService:
    return PasskeyService(
        passkeys=store.passkeys,
        challenges=store.passkey_challenges,
        accounts=store.accounts,
        events=store.events,
        units=store.units,
        sessions=sessions,
        clock=clock,
        relying_party=relying_party,
        policy=policy,
        signin=signin,
        metrics=metrics,
    )


@pytest.fixture
def service(
    store: MemoryStore,
    sessions: SessionService,
    clock: FixedClock,
    relying_party: FakeRelyingParty,
    passkey_policy: PasskeyPolicy,
    signin_policy: SignInPolicy,
    metrics: RecordingMetrics,
) -> PasskeyService:
    return passkey_service(
        store, sessions, clock, relying_party, passkey_policy, signin_policy, metrics
    )


@attrs.define
class Ceremonies:
    """A browser (:data:`BINDING`) going through the ceremonies with the relying party."""

    service: PasskeyService
    rp: FakeRelyingParty

    async def add(
        self,
        caller: Caller,
        credential_id: bytes = KEY_1,
        *,
        name: str | None = None,
        binding: str = BINDING,
        **response: Any,
    ) -> Passkey:
        options = await self.service.registration_options(caller, binding)
        answer = self.rp.registration(self.rp.challenge_of(options), credential_id, **response)
        return await self.service.register(caller, binding, answer, name)

    async def answer(
        self,
        credential_id: bytes,
        handle: bytes | None,
        *,
        binding: str = BINDING,
        **response: Any,
    ) -> dict[str, Any]:
        """Ask for the options, and answer their challenge with ``credential_id``."""
        options = await self.service.authentication_options(binding)
        return self.rp.assertion(self.rp.challenge_of(options), credential_id, handle, **response)

    async def sign_in(
        self,
        passkey: Passkey,
        *,
        sign_count: int = 0,
        return_to: str | None = None,
        held_session: str | None = None,
        **response: Any,
    ) -> PasskeySignedIn:
        answer = await self.answer(
            passkey.credential_id,
            user_handle(passkey.account_id),
            sign_count=sign_count,
            **response,
        )
        return await self.service.authenticate(BINDING, answer, CLIENT, return_to, held_session)


@pytest.fixture
def ceremonies(service: PasskeyService, relying_party: FakeRelyingParty) -> Ceremonies:
    return Ceremonies(service, relying_party)


@contextlib.contextmanager
def challenge_refused(detail: str) -> Iterator[None]:
    """The block raises InvalidPasskeyChallenge for ``detail`` (the log's and audit's)."""
    with pytest.raises(errors.InvalidPasskeyChallenge) as refused:
        yield
    assert refused.value.detail == detail


async def audit(store: MemoryStore, account_id: str | None = None) -> list[SignInEvent]:
    """The audit trail, newest first (of one account, or all of it)."""
    if account_id is None:
        return await store.events.recent()
    return await store.events.for_account(account_id)


# -- adding a passkey -------------------------------------------------------------------------


async def test_the_creation_options_name_the_account_and_keep_the_challenge(
    flow: SignIns,
    service: PasskeyService,
    relying_party: FakeRelyingParty,
    store: MemoryStore,
    clock: FixedClock,
) -> None:
    alice = await flow.caller(await flow.register("alice", name="Alice"))
    options = await service.registration_options(alice, BINDING)
    assert options["timeout"] == 90_000  # the policy's registration timeout, in milliseconds
    [(user, excluded, challenge)] = relying_party.created
    assert user.handle == user_handle(alice.account_id) == alice.account_id.encode()
    assert (user.name, user.display_name) == ("alice@google.example", "Alice")
    assert excluded == [] and len(challenge) == 32
    assert relying_party.challenge_of(options) == challenge
    kept = await store.passkey_challenges.take(
        binding_hash(BINDING), Ceremony.REGISTRATION, clock.now()
    )
    assert kept is not None and kept.challenge == challenge
    assert (kept.account_id, kept.session_id) == (alice.account_id, alice.session_id)
    assert kept.expires_at == clock.now() + dt.timedelta(minutes=5)


async def test_an_account_without_email_or_name_is_named_by_its_id(
    flow: SignIns, service: PasskeyService, relying_party: FakeRelyingParty
) -> None:
    nameless = attrs.evolve(verified("google", "bob"), email=None, name=None)
    bob = await flow.caller(await flow.sign_in(nameless, intent=Intent.REGISTER))
    await service.registration_options(bob, BINDING)
    [(user, _, _)] = relying_party.created
    assert user.name == f"authgate account {bob.account_id[:8]}"
    assert user.display_name == "authgate account"


async def test_the_creation_options_exclude_the_accounts_passkeys(
    flow: SignIns, ceremonies: Ceremonies, relying_party: FakeRelyingParty
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    first = await ceremonies.add(alice, KEY_1)
    await ceremonies.service.registration_options(alice, BINDING)
    assert relying_party.created[-1][1] == [first]


async def test_a_registration_keeps_the_passkey_with_where_it_was_added_and_audits_it(
    flow: SignIns, ceremonies: Ceremonies, store: MemoryStore, clock: FixedClock
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    clock.advance(30)
    added = await ceremonies.add(alice, KEY_1, name="  Laptop  ", sign_count=7, backed_up=True)
    assert added.account_id == alice.account_id and added.credential_id == KEY_1
    assert added.public_key == b"cose-key-of-" + KEY_1
    assert (added.name, added.sign_count, added.backed_up) == ("Laptop", 7, True)
    assert added.created_at == clock.now() and added.last_used_at is None
    assert added.added_by_session == alice.session_id
    assert (added.added_from_address, added.added_from_user_agent) == (
        CLIENT.address,
        CLIENT.user_agent,
    )
    assert await store.passkeys.for_account(alice.account_id) == [added]
    event = (await audit(store, alice.account_id))[0]
    assert (event.outcome, event.provider, event.detail) == (
        Outcome.PASSKEY_ADDED,
        PASSKEY_PROVIDER,
        added.id,
    )
    assert event.at == clock.now() and event.client_address == CLIENT.address


async def test_a_passkey_without_a_name_is_called_passkey(
    flow: SignIns, ceremonies: Ceremonies
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    assert (await ceremonies.add(alice)).name == "Passkey"


@pytest.mark.parametrize("name", ["", "   ", "x" * 65, "new\nline"])
async def test_a_bad_name_is_refused_before_the_challenge_is_used(
    flow: SignIns, service: PasskeyService, relying_party: FakeRelyingParty, name: str
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    options = await service.registration_options(alice, BINDING)
    answer = relying_party.registration(relying_party.challenge_of(options), KEY_1)
    with pytest.raises(errors.InvalidPasskeyName):
        await service.register(alice, BINDING, answer, name)
    assert await service.list(alice.account_id) == []
    kept = await service.register(alice, BINDING, answer, "Fine")  # the challenge still waits
    assert kept.name == "Fine"


async def test_a_registration_challenge_is_used_once(
    flow: SignIns, service: PasskeyService, relying_party: FakeRelyingParty
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    options = await service.registration_options(alice, BINDING)
    answer = relying_party.registration(relying_party.challenge_of(options), KEY_1)
    await service.register(alice, BINDING, answer)
    with challenge_refused("no registration challenge for this browser"):
        await service.register(alice, BINDING, relying_party.registration(b"", KEY_2))


async def test_a_registration_needs_this_browsers_live_registration_challenge(
    flow: SignIns,
    service: PasskeyService,
    relying_party: FakeRelyingParty,
    clock: FixedClock,
    store: MemoryStore,
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    options = await service.registration_options(alice, BINDING)
    answer = relying_party.registration(relying_party.challenge_of(options), KEY_1)
    with challenge_refused("binding cookie absent"):
        await service.register(alice, None, answer)
    with challenge_refused("no registration challenge for this browser"):
        await service.register(alice, OTHER_BROWSER, answer)
    # an authentication challenge of this browser is not a registration's
    sign_in = await service.authentication_options(OTHER_BROWSER)
    with pytest.raises(errors.InvalidPasskeyChallenge):
        await service.register(
            alice,
            OTHER_BROWSER,
            relying_party.registration(relying_party.challenge_of(sign_in), KEY_1),
        )
    clock.advance(minutes=5)  # the challenge's lifetime is over
    with challenge_refused("no registration challenge for this browser"):
        await service.register(alice, BINDING, answer)
    assert await service.list(alice.account_id) == []
    assert [e.outcome for e in await audit(store, alice.account_id)] == [Outcome.REGISTERED]


async def test_a_registration_challenge_of_another_session_is_refused(
    flow: SignIns, service: PasskeyService, relying_party: FakeRelyingParty
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    other_session = await flow.caller(await flow.sign_in(verified("google", "alice")))
    options = await service.registration_options(alice, BINDING)
    answer = relying_party.registration(relying_party.challenge_of(options), KEY_1)
    with challenge_refused("issued to another session"):
        await service.register(other_session, BINDING, answer)
    assert await service.list(alice.account_id) == []


async def test_a_refused_registration_response_keeps_nothing(
    flow: SignIns, ceremonies: Ceremonies, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    with pytest.raises(errors.InvalidPasskeyResponse) as malformed:
        await ceremonies.add(alice, malformed="attestationObject is not CBOR")
    assert malformed.value.detail == "attestationObject is not CBOR"
    with pytest.raises(errors.PasskeyNotVerified) as refused:
        await ceremonies.add(alice, refuse="the origin is not allowed")
    assert refused.value.reason == "the origin is not allowed"
    with pytest.raises(errors.PasskeyNotVerified, match="challenge"):
        options = await ceremonies.service.registration_options(alice, BINDING)
        wrong = bytes(32) if ceremonies.rp.challenge_of(options) != bytes(32) else b"x"
        await ceremonies.service.register(alice, BINDING, ceremonies.rp.registration(wrong, KEY_1))
    assert await store.passkeys.for_account(alice.account_id) == []
    assert Outcome.PASSKEY_ADDED not in [e.outcome for e in await audit(store)]


async def test_a_credential_registered_already_is_refused(
    flow: SignIns, ceremonies: Ceremonies, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    bob = await flow.caller(await flow.register("bob"))
    await ceremonies.add(alice, KEY_1)
    with pytest.raises(errors.PasskeyAlreadyRegistered):
        await ceremonies.add(bob, KEY_1)
    assert await store.passkeys.for_account(bob.account_id) == []
    assert Outcome.PASSKEY_ADDED not in [e.outcome for e in await audit(store, bob.account_id)]


async def test_a_registration_for_an_account_deleted_meanwhile_is_refused(
    flow: SignIns, service: PasskeyService, relying_party: FakeRelyingParty, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    options = await service.registration_options(alice, BINDING)
    await store.accounts.delete(alice.account_id)
    answer = relying_party.registration(relying_party.challenge_of(options), KEY_1)
    with pytest.raises(errors.AccountGone):
        await service.register(alice, BINDING, answer)
    with pytest.raises(errors.AccountGone):
        await service.registration_options(alice, BINDING)
    assert await store.passkeys.find_by_credential(KEY_1) is None


async def test_adding_a_passkey_needs_a_recent_sign_in_once_the_account_can_prove_one(
    flow: SignIns, ceremonies: Ceremonies, clock: FixedClock, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    await ceremonies.add(alice, KEY_1)
    clock.advance(minutes=11)  # past reauthenticate_after (10 minutes)
    with pytest.raises(errors.ReauthenticationRequired) as needed:
        await ceremonies.service.registration_options(alice, BINDING)
    assert needed.value.max_age == 600
    assert (
        await store.passkey_challenges.take(
            binding_hash(BINDING), Ceremony.REGISTRATION, clock.now()
        )
        is None
    )  # no challenge was kept for the refused options
    with pytest.raises(errors.ReauthenticationRequired):
        await ceremonies.service.register(alice, BINDING, ceremonies.rp.registration(b"", KEY_2))


async def test_the_first_passkey_of_an_account_that_cannot_prove_a_login_needs_a_new_session(
    flow: SignIns, ceremonies: Ceremonies, clock: FixedClock
) -> None:
    # google proves no login time here (proving_providers is empty): the session's own start
    # is the evidence, within the re-authentication window.
    alice = await flow.caller(await flow.register("alice"))
    stale = attrs.evolve(alice, auth_time=None)
    clock.advance(minutes=9)
    assert (await ceremonies.add(stale, KEY_1)).account_id == alice.account_id
    clock.advance(minutes=2)  # the session began 11 minutes ago; and a passkey now proves
    with pytest.raises(errors.ReauthenticationRequired):
        await ceremonies.service.registration_options(stale, BINDING)


async def test_the_first_passkey_outside_the_window_after_the_sign_in_is_refused(
    flow: SignIns, service: PasskeyService, clock: FixedClock
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    clock.advance(minutes=11)
    with pytest.raises(errors.ReauthenticationRequired):
        await service.registration_options(attrs.evolve(alice, auth_time=None), BINDING)


async def test_options_are_refused_while_the_challenges_are_at_capacity(
    flow: SignIns,
    store: MemoryStore,
    sessions: SessionService,
    clock: FixedClock,
    relying_party: FakeRelyingParty,
    passkey_policy: PasskeyPolicy,
    signin_policy: SignInPolicy,
    metrics: RecordingMetrics,
) -> None:
    store.passkey_challenges = MemoryPasskeyChallenges(max_entries=1)
    service = passkey_service(
        store, sessions, clock, relying_party, passkey_policy, signin_policy, metrics
    )
    alice = await flow.caller(await flow.register("alice"))
    await service.authentication_options(OTHER_BROWSER)
    with pytest.raises(errors.TemporarilyUnavailable):
        await service.authentication_options(BINDING)
    with pytest.raises(errors.TemporarilyUnavailable):
        await service.registration_options(alice, BINDING)
    assert relying_party.created == [] and len(relying_party.requested) == 1


# -- signing in -------------------------------------------------------------------------------


async def alice_with_passkey(flow: SignIns, ceremonies: Ceremonies) -> tuple[Caller, Passkey]:
    alice = await flow.caller(await flow.register("alice"))
    return alice, await ceremonies.add(alice, KEY_1)


async def test_the_request_options_keep_an_authentication_challenge_for_the_browser(
    service: PasskeyService, relying_party: FakeRelyingParty, store: MemoryStore, clock: FixedClock
) -> None:
    options = await service.authentication_options(BINDING)
    assert options["timeout"] == 120_000 and options["allowCredentials"] == []
    [challenge] = relying_party.requested
    assert relying_party.challenge_of(options) == challenge
    kept = await store.passkey_challenges.take(
        binding_hash(BINDING), Ceremony.AUTHENTICATION, clock.now()
    )
    assert kept is not None and kept.challenge == challenge
    assert (kept.account_id, kept.session_id) == (None, None)


async def test_each_options_request_has_a_new_challenge(
    service: PasskeyService, relying_party: FakeRelyingParty
) -> None:
    await service.authentication_options(BINDING)
    await service.authentication_options(BINDING)
    first, second = relying_party.requested
    assert first != second


async def test_a_passkey_sign_in_issues_a_session_and_records_the_use(
    flow: SignIns,
    ceremonies: Ceremonies,
    sessions: SessionService,
    store: MemoryStore,
    clock: FixedClock,
    metrics: RecordingMetrics,
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    clock.advance(60)
    signed_in = await ceremonies.sign_in(passkey, sign_count=0, backed_up=True)
    assert signed_in.account_id == alice.account_id and signed_in.passkey == passkey
    assert signed_in.destination == f"{APP_URL}/dashboard"
    assert signed_in.session_max_age == 3600  # the session policy's ttl
    claims = await sessions.verify(signed_in.session.token)
    assert claims.account_id == alice.account_id and claims.provider == PASSKEY_PROVIDER
    assert claims.auth_time == clock.now()
    assert signed_in.session.session_id not in ("", alice.session_id)
    record = await store.sessions.get(signed_in.session.session_id)
    assert record is not None and record.passkey_id == passkey.id
    used = await store.passkeys.get(alice.account_id, passkey.id)
    assert used is not None and used.last_used_at == clock.now() and used.backed_up
    account = await store.accounts.get(alice.account_id)
    assert account is not None and account.last_login_at == clock.now()
    event = (await audit(store, alice.account_id))[0]
    assert (event.outcome, event.provider, event.detail) == (
        Outcome.SIGNED_IN,
        PASSKEY_PROVIDER,
        passkey.id,
    )
    assert metrics.sign_ins[-1] == (PASSKEY_PROVIDER, "signed_in", "none")
    assert metrics.issued == [PASSKEY_PROVIDER]


async def test_the_signature_counter_must_advance(
    flow: SignIns, ceremonies: Ceremonies, store: MemoryStore
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    await ceremonies.sign_in(passkey, sign_count=5)
    await ceremonies.sign_in(passkey, sign_count=9)
    used = await store.passkeys.get(alice.account_id, passkey.id)
    assert used is not None and used.sign_count == 9


@pytest.mark.parametrize("counter", [9, 4])
async def test_a_counter_that_stands_still_or_goes_back_is_a_clone_refused_and_audited(
    flow: SignIns,
    ceremonies: Ceremonies,
    store: MemoryStore,
    sessions: SessionService,
    metrics: RecordingMetrics,
    caplog: pytest.LogCaptureFixture,
    counter: int,
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    await ceremonies.sign_in(passkey, sign_count=9)
    live_before = await sessions.live_sessions(alice.account_id)
    with (
        caplog.at_level(logging.WARNING, "authgate.security"),
        pytest.raises(errors.PasskeyNotVerified, match="cloned"),
    ):
        await ceremonies.sign_in(passkey, sign_count=counter)
    assert f"signed with counter {counter} after 9" in caplog.text
    event = (await audit(store, alice.account_id))[0]
    assert event.outcome == Outcome.PASSKEY_COUNTER_REGRESSED
    assert event.detail == f"passkey {passkey.id}: counter {counter} after 9"
    assert metrics.sign_ins[-1] == (PASSKEY_PROVIDER, "failed", "passkey_counter_regressed")
    kept = await store.passkeys.get(alice.account_id, passkey.id)
    assert kept is not None and kept.sign_count == 9
    assert await sessions.live_sessions(alice.account_id) == live_before


class BrokenLog:
    """An audit log that cannot store (its database is gone)."""

    async def record(self, event: SignInEvent) -> None:
        raise ConnectionError("the audit log is unreachable")


async def test_a_refusal_stays_a_refusal_when_its_audit_cannot_be_stored(
    service: PasskeyService, relying_party: FakeRelyingParty, caplog: pytest.LogCaptureFixture
) -> None:
    service.events = BrokenLog()  # type: ignore[assignment]
    options = await service.authentication_options(BINDING)
    answer = relying_party.assertion(relying_party.challenge_of(options), KEY_2, b"someone")
    with pytest.raises(errors.UnknownPasskey):
        await service.authenticate(BINDING, answer, CLIENT)
    assert "could not store a passkey sign-in event" in caplog.text


async def test_of_two_sign_ins_with_one_counter_value_the_second_is_a_clone(
    flow: SignIns,
    ceremonies: Ceremonies,
    relying_party: FakeRelyingParty,
    store: MemoryStore,
    clock: FixedClock,
) -> None:
    # The first sign-in records counter 5 between this one's read of the passkey and its
    # write (as another instance's would, on a database): the write decides.
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    relying_party.while_verifying = lambda: _run(
        store.passkeys.record_use(passkey.id, 5, False, clock.now())
    )
    with pytest.raises(errors.PasskeyNotVerified, match="cloned"):
        await ceremonies.sign_in(passkey, sign_count=5)
    event = (await audit(store, alice.account_id))[0]
    assert event.outcome == Outcome.PASSKEY_COUNTER_REGRESSED
    assert event.detail == f"passkey {passkey.id}: counter 5 after 5"
    assert [s.provider for s in await store.sessions.for_account(alice.account_id)] == ["google"]


async def test_a_passkey_removed_while_signing_in_is_unknown(
    flow: SignIns,
    ceremonies: Ceremonies,
    relying_party: FakeRelyingParty,
    store: MemoryStore,
    clock: FixedClock,
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)

    def removed() -> None:
        assert _run(store.passkeys.delete(alice.account_id, passkey.id))
        assert not _run(store.passkeys.record_use(passkey.id, 1, False, clock.now()))

    relying_party.while_verifying = removed
    with pytest.raises(errors.UnknownPasskey):
        await ceremonies.sign_in(passkey, sign_count=1)
    assert [s.provider for s in await store.sessions.for_account(alice.account_id)] == ["google"]


def _run(step: Coroutine[Any, Any, T]) -> T:
    """Run a memory store's method to its end at once (it never waits): what another
    instance's sign-in writes while this one runs."""
    try:
        step.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    raise AssertionError("the store's method waited")


async def test_an_unknown_credential_is_refused_and_audited_without_an_account(
    ceremonies: Ceremonies, store: MemoryStore, metrics: RecordingMetrics
) -> None:
    answer = await ceremonies.answer(KEY_2, b"someone")
    with pytest.raises(errors.UnknownPasskey):
        await ceremonies.service.authenticate(BINDING, answer, CLIENT)
    [event] = await audit(store)
    assert (event.outcome, event.account_id, event.detail) == (
        Outcome.FAILED,
        None,
        "UnknownPasskey",
    )
    assert metrics.sign_ins == [(PASSKEY_PROVIDER, "failed", "unknown_passkey")]
    assert metrics.durations == [PASSKEY_PROVIDER]


@pytest.mark.parametrize(
    ("handle", "reason"),
    [
        (None, "the authenticator returned no user handle"),
        (b"another-account", "the user handle is not the passkey's account's"),
    ],
)
async def test_the_user_handle_must_be_the_passkeys_account(
    flow: SignIns,
    ceremonies: Ceremonies,
    store: MemoryStore,
    sessions: SessionService,
    handle: bytes | None,
    reason: str,
) -> None:
    alice, _ = await alice_with_passkey(flow, ceremonies)
    answer = await ceremonies.answer(KEY_1, handle)
    with pytest.raises(errors.PasskeyNotVerified) as refused:
        await ceremonies.service.authenticate(BINDING, answer, CLIENT)
    assert refused.value.reason == reason
    event = (await audit(store, alice.account_id))[0]
    assert (event.outcome, event.detail) == (Outcome.FAILED, reason)
    assert len(await sessions.live_sessions(alice.account_id)) == 1  # the registration's


async def test_a_refused_assertion_changes_nothing_but_its_challenge(
    flow: SignIns,
    ceremonies: Ceremonies,
    store: MemoryStore,
    metrics: RecordingMetrics,
    clock: FixedClock,
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    account_before = await store.accounts.get(alice.account_id)
    clock.advance(60)
    answer = await ceremonies.answer(
        KEY_1, user_handle(alice.account_id), sign_count=3, refuse="the signature does not verify"
    )
    with pytest.raises(errors.PasskeyNotVerified) as refused:
        await ceremonies.service.authenticate(BINDING, answer, CLIENT)
    assert refused.value.reason == "the signature does not verify"
    assert refused.value.account_id == alice.account_id
    event = (await audit(store, alice.account_id))[0]
    assert (event.outcome, event.detail) == (Outcome.FAILED, "the signature does not verify")
    assert metrics.sign_ins[-1] == (PASSKEY_PROVIDER, "failed", "passkey_not_verified")
    assert await store.passkeys.get(alice.account_id, passkey.id) == passkey
    assert await store.accounts.get(alice.account_id) == account_before  # no new last sign-in
    assert len(await store.sessions.for_account(alice.account_id)) == 1  # the registration's
    with pytest.raises(errors.InvalidPasskeyChallenge):  # the challenge went with the attempt
        await ceremonies.service.authenticate(BINDING, answer, CLIENT)


async def test_a_malformed_response_is_refused_when_read_or_when_verified(
    flow: SignIns, ceremonies: Ceremonies, store: MemoryStore
) -> None:
    alice, _ = await alice_with_passkey(flow, ceremonies)
    handle = user_handle(alice.account_id)
    unreadable = await ceremonies.answer(KEY_1, handle, malformed="rawId is not base64url")
    with pytest.raises(errors.InvalidPasskeyResponse) as read:
        await ceremonies.service.authenticate(BINDING, unreadable, CLIENT)
    assert read.value.detail == "rawId is not base64url"
    refusal = (await audit(store))[0]
    assert (refusal.outcome, refusal.account_id, refusal.detail) == (
        Outcome.FAILED,
        None,
        "rawId is not base64url",
    )
    late = await ceremonies.answer(KEY_1, handle, malformed_on_verify="signature is not bytes")
    with pytest.raises(errors.InvalidPasskeyResponse, match="signature is not bytes"):
        await ceremonies.service.authenticate(BINDING, late, CLIENT)


async def test_a_sign_in_needs_this_browsers_authentication_challenge(
    flow: SignIns, ceremonies: Ceremonies, store: MemoryStore, clock: FixedClock
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    answer = await ceremonies.answer(KEY_1, user_handle(alice.account_id))
    with challenge_refused("binding cookie absent"):
        await ceremonies.service.authenticate(None, answer, CLIENT)
    with challenge_refused("no authentication challenge for this browser"):
        await ceremonies.service.authenticate(OTHER_BROWSER, answer, CLIENT)
    event = (await audit(store))[0]
    assert (event.outcome, event.detail) == (
        Outcome.INVALID_STATE,
        "no authentication challenge for this browser",
    )
    clock.advance(minutes=5)
    with pytest.raises(errors.InvalidPasskeyChallenge):
        await ceremonies.service.authenticate(BINDING, answer, CLIENT)
    # a registration challenge of the browser is not an authentication's
    options = await ceremonies.service.registration_options(
        attrs.evolve(alice, auth_time=clock.now()), BINDING
    )
    other = ceremonies.rp.assertion(
        ceremonies.rp.challenge_of(options), KEY_1, user_handle(alice.account_id)
    )
    with pytest.raises(errors.InvalidPasskeyChallenge):
        await ceremonies.service.authenticate(BINDING, other, CLIENT)
    assert await store.passkeys.get(alice.account_id, passkey.id) == passkey


async def test_an_answer_to_another_challenge_of_the_browser_is_not_verified(
    flow: SignIns, ceremonies: Ceremonies
) -> None:
    alice, _ = await alice_with_passkey(flow, ceremonies)
    first = await ceremonies.answer(KEY_1, user_handle(alice.account_id))
    await ceremonies.service.authentication_options(BINDING)  # replaces the first challenge
    with pytest.raises(errors.PasskeyNotVerified, match="challenge"):
        await ceremonies.service.authenticate(BINDING, first, CLIENT)


async def test_a_passkey_of_an_account_with_a_disabled_identity_signs_nobody_in(
    flow: SignIns,
    ceremonies: Ceremonies,
    store: MemoryStore,
    sessions: SessionService,
    caplog: pytest.LogCaptureFixture,
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    identity = verified("google", "alice").identity
    await store.accounts.set_identity_disabled(identity, "account-disabled")
    with (
        caplog.at_level(logging.WARNING, "authgate.security"),
        pytest.raises(errors.AccountDisabled),
    ):
        await ceremonies.sign_in(passkey, sign_count=1)
    assert "is disabled (account-disabled)" in caplog.text
    event = (await audit(store, alice.account_id))[0]
    assert (event.outcome, event.detail) == (Outcome.FAILED, "AccountDisabled")
    kept = await store.passkeys.get(alice.account_id, passkey.id)
    assert kept is not None and kept.sign_count == 0 and kept.last_used_at is None
    assert len(await sessions.live_sessions(alice.account_id)) == 1
    await store.accounts.set_identity_disabled(identity, None)
    await ceremonies.sign_in(passkey, sign_count=1)


async def test_a_sign_in_goes_where_it_was_asked_to_on_the_application(
    flow: SignIns, ceremonies: Ceremonies
) -> None:
    _, passkey = await alice_with_passkey(flow, ceremonies)
    on_app = await ceremonies.sign_in(passkey, return_to="/settings?tab=keys")
    assert on_app.destination == f"{APP_URL}/settings?tab=keys"
    elsewhere = await ceremonies.sign_in(passkey, return_to="https://evil.example/steal")
    assert elsewhere.destination == f"{APP_URL}/dashboard"


async def test_a_sign_in_for_an_authorization_request_resumes_it(
    flow: SignIns,
    store: MemoryStore,
    sessions: SessionService,
    clock: FixedClock,
    relying_party: FakeRelyingParty,
    passkey_policy: PasskeyPolicy,
    signin_policy: SignInPolicy,
    metrics: RecordingMetrics,
) -> None:
    resuming = attrs.evolve(signin_policy, resume_urls=frozenset({RESUME_URL}))
    service = passkey_service(
        store, sessions, clock, relying_party, passkey_policy, resuming, metrics
    )
    ceremonies = Ceremonies(service, relying_party)
    _, passkey = await alice_with_passkey(flow, ceremonies)
    started = clock.now()
    answer = await ceremonies.answer(passkey.credential_id, user_handle(passkey.account_id))
    clock.advance(20)
    return_to = f"{RESUME_URL}?client_id=web&state=s1"
    signed_in = await service.authenticate(BINDING, answer, CLIENT, return_to)
    assert signed_in.destination == return_to
    claims = await sessions.verify(signed_in.session.token)
    assert claims.resumes is not None and claims.signin_started_at == started
    plain = await ceremonies.sign_in(passkey)
    assert (await sessions.verify(plain.session.token)).resumes is None


async def test_a_step_up_in_a_browser_signed_in_to_the_account_proves_its_session(
    flow: SignIns,
    ceremonies: Ceremonies,
    sessions: SessionService,
    store: MemoryStore,
    clock: FixedClock,
) -> None:
    registered = await flow.register("alice")
    alice = await flow.caller(registered)
    passkey = await ceremonies.add(alice, KEY_1)
    clock.advance(minutes=30)
    stepped = await ceremonies.sign_in(passkey, held_session=registered.session.token)
    assert stepped.session.session_id == alice.session_id  # one browser, one session
    claims = await sessions.verify(stepped.session.token)
    assert claims.auth_time == clock.now()
    assert [r.id for r in await sessions.live_sessions(alice.account_id)] == [alice.session_id]
    record = await store.sessions.get(alice.session_id)
    assert record is not None and record.auth_time == clock.now()


async def test_a_held_session_of_another_account_or_none_live_gets_a_new_session(
    flow: SignIns, ceremonies: Ceremonies, sessions: SessionService, store: MemoryStore
) -> None:
    registered = await flow.register("alice")
    alice = await flow.caller(registered)
    passkey = await ceremonies.add(alice, KEY_1)
    bob = await flow.register("bob")
    beside_bob = await ceremonies.sign_in(passkey, held_session=bob.session.token)
    assert beside_bob.session.session_id not in (alice.session_id, bob.session.session_id)
    forged = await ceremonies.sign_in(passkey, held_session="not-a-session-token")
    assert forged.session.session_id not in (alice.session_id, beside_bob.session.session_id)
    assert await sessions.revoke(
        alice.account_id, alice.session_id, client=CLIENT, provider="google"
    )
    after_revoked = await ceremonies.sign_in(passkey, held_session=registered.session.token)
    assert after_revoked.session.session_id != alice.session_id
    live = {r.id for r in await sessions.live_sessions(alice.account_id)}
    assert live == {
        beside_bob.session.session_id,
        forged.session.session_id,
        after_revoked.session.session_id,
    }
    record = await store.sessions.get(alice.session_id)
    assert record is not None and record.revoked_at is not None  # not revived by the sign-in


# -- the account's passkeys -------------------------------------------------------------------


async def test_the_list_is_the_accounts_passkeys_oldest_first(
    flow: SignIns, ceremonies: Ceremonies, clock: FixedClock
) -> None:
    alice = await flow.caller(await flow.register("alice"))
    bob = await flow.caller(await flow.register("bob"))
    first = await ceremonies.add(alice, KEY_1, name="First")
    clock.advance(1)
    second = await ceremonies.add(alice, KEY_2, name="Second")
    await ceremonies.add(bob, b"\x03" * 32)
    assert await ceremonies.service.list(alice.account_id) == [first, second]
    assert await ceremonies.service.list("nobody") == []


async def test_rename_keeps_a_clean_name_for_the_callers_own_passkey(
    flow: SignIns, ceremonies: Ceremonies, store: MemoryStore
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    bob = await flow.caller(await flow.register("bob"))
    renamed = await ceremonies.service.rename(alice, passkey.id, "  Phone ")
    assert renamed == attrs.evolve(passkey, name="Phone")
    assert await store.passkeys.get(alice.account_id, passkey.id) == renamed
    with pytest.raises(errors.InvalidPasskeyName):
        await ceremonies.service.rename(alice, passkey.id, "\u2028")
    with pytest.raises(errors.PasskeyNotFound):
        await ceremonies.service.rename(bob, passkey.id, "Mine now")
    with pytest.raises(errors.PasskeyNotFound):
        await ceremonies.service.rename(alice, "no-such-passkey", "Phone")
    assert await store.passkeys.get(alice.account_id, passkey.id) == renamed


async def test_remove_ends_the_sessions_the_passkey_signed_in_but_the_callers(
    flow: SignIns,
    ceremonies: Ceremonies,
    other_instance_sessions: SessionService,
    sessions: SessionService,
    store: MemoryStore,
    metrics: RecordingMetrics,
) -> None:
    registered = await flow.register("alice")
    alice = await flow.caller(registered)
    passkey = await ceremonies.add(alice, KEY_1)
    second = await ceremonies.add(alice, KEY_2)
    through_passkey = await ceremonies.sign_in(passkey)
    through_other = await ceremonies.sign_in(second)
    own = await ceremonies.sign_in(passkey)  # the caller's own session, signed in with it
    caller = await caller_of(own, sessions)
    await sessions.verify(through_passkey.session.token)  # trusted a moment, here and there
    await other_instance_sessions.verify(through_passkey.session.token)
    await ceremonies.service.remove(caller, passkey.id)
    assert [p.id for p in await ceremonies.service.list(alice.account_id)] == [second.id]
    with pytest.raises(InvalidSession):
        await sessions.verify(through_passkey.session.token)
    with pytest.raises(InvalidSession):  # told through the revocation channel
        await other_instance_sessions.verify(through_passkey.session.token)
    await sessions.verify(through_other.session.token)
    await sessions.verify(own.session.token)
    assert (await sessions.verify(registered.session.token)).session_id == alice.session_id
    assert metrics.revoked == []  # counted by the session service, not the passkeys'
    event = (await audit(store, alice.account_id))[0]
    assert (event.outcome, event.provider, event.detail) == (
        Outcome.PASSKEY_REMOVED,
        PASSKEY_PROVIDER,
        passkey.id,
    )
    assert await store.passkeys.find_by_credential(KEY_1) is None


async def caller_of(signed_in: PasskeySignedIn, sessions: SessionService) -> Caller:
    """The signed-in user of a passkey sign-in's session, as the HTTP layer reads it."""
    claims = await sessions.verify(signed_in.session.token)
    return Caller(
        account_id=claims.account_id,
        session_id=claims.session_id,
        provider=claims.provider or "",
        auth_time=claims.auth_time,
        client=CLIENT,
    )


async def test_remove_needs_a_recent_sign_in(
    flow: SignIns, ceremonies: Ceremonies, clock: FixedClock
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    clock.advance(minutes=11)
    with pytest.raises(errors.ReauthenticationRequired):
        await ceremonies.service.remove(alice, passkey.id)
    assert await ceremonies.service.list(alice.account_id) == [passkey]


async def test_the_last_sign_in_method_is_never_removed(
    flow: SignIns, ceremonies: Ceremonies, store: MemoryStore
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    await store.accounts.unlink_identity(alice.account_id, "google")  # the passkey remains
    with pytest.raises(errors.LastSignInMethod):
        await ceremonies.service.remove(alice, passkey.id)
    assert await ceremonies.service.list(alice.account_id) == [passkey]
    assert Outcome.PASSKEY_REMOVED not in [e.outcome for e in await audit(store)]


async def test_removing_a_passkey_the_caller_does_not_hold_is_not_found(
    flow: SignIns, ceremonies: Ceremonies
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    bob = await flow.caller(await flow.register("bob"))
    with pytest.raises(errors.PasskeyNotFound):
        await ceremonies.service.remove(bob, passkey.id)
    with pytest.raises(errors.PasskeyNotFound):
        await ceremonies.service.remove(alice, "no-such-passkey")
    assert await ceremonies.service.list(alice.account_id) == [passkey]


async def test_a_removal_inside_a_unit_names_why_and_keeps_the_given_session(
    flow: SignIns,
    ceremonies: Ceremonies,
    sessions: SessionService,
    store: MemoryStore,
    clock: FixedClock,
) -> None:
    alice, passkey = await alice_with_passkey(flow, ceremonies)
    kept = await ceremonies.sign_in(passkey)
    ended = await ceremonies.sign_in(passkey)
    async with store.units.begin() as tx:
        gone = await remove_passkey_in(
            sessions,
            tx,
            alice,
            passkey.id,
            clock.now(),
            keep=kept.session.session_id,
            detail="signed out everywhere else",
        )
    assert gone == [ended.session.session_id]
    event = (await audit(store, alice.account_id))[0]
    assert event.detail == f"{passkey.id}: signed out everywhere else"
    async with store.units.begin() as tx:
        assert (
            await remove_passkey_in(sessions, tx, alice, passkey.id, clock.now(), keep=None) is None
        )
