"""Provider tokens: kept sealed at sign-in, moved to the revocation outbox with the unlink or
deletion that drops them, and revoked at the provider by the worker, with retries."""

from __future__ import annotations

import datetime as dt

import pytest

from authgate.adapters.jose import JweTokenSealer
from authgate.domain import errors
from authgate.domain.model import Caller, Intent, Outcome, ProviderToken
from authgate.ports.provider_tokens import RevocationFailed, Revoked
from authgate.services.account import AccountService
from authgate.services.provider_tokens import RevocationWorker
from tests.services.conftest import SignIns
from tests.services.fakes import FakeRevoker, FixedClock
from tests.support.records import verified
from tests.support.stores import MemoryStore

GOOGLE_TOKEN = ProviderToken("google-refresh-token-of-alice", "refresh_token")
APPLE_TOKEN = ProviderToken("apple-refresh-token-of-alice", "refresh_token")


async def alice_with_tokens(flow: SignIns) -> Caller:
    """Alice registered with Google and linked Apple, each handing us a token to keep."""
    alice = await flow.caller(await flow.register("alice", provider_token=GOOGLE_TOKEN))
    apple = verified("apple", "alice-apple", provider_token=APPLE_TOKEN)
    await flow.sign_in(apple, intent=Intent.LINK, caller=alice)
    return alice


async def outcomes(store: MemoryStore, account_id: str) -> list[Outcome]:
    return [e.outcome for e in await store.events.for_account(account_id)]


# -- kept sealed ------------------------------------------------------------------------------


async def test_a_sign_in_keeps_the_providers_token_sealed(
    flow: SignIns, store: MemoryStore, sealer: JweTokenSealer
) -> None:
    signed_in = await flow.register("alice", provider_token=GOOGLE_TOKEN)
    [kept] = await store.provider_tokens.for_account(signed_in.account.id)
    assert kept.identity == verified("google", "alice").identity
    assert kept.sealed.key_id == "k1"
    assert GOOGLE_TOKEN.value not in kept.sealed.ciphertext
    assert sealer.open(kept.sealed, kept.identity) == GOOGLE_TOKEN


async def test_a_later_sign_in_replaces_the_kept_token(
    flow: SignIns, store: MemoryStore, sealer: JweTokenSealer
) -> None:
    registered = await flow.register("alice", provider_token=GOOGLE_TOKEN)
    newer = ProviderToken("google-refresh-token-2", "refresh_token")
    await flow.sign_in(verified("google", "alice", provider_token=newer))
    [kept] = await store.provider_tokens.for_account(registered.account.id)
    assert sealer.open(kept.sealed, kept.identity) == newer


@pytest.mark.parametrize("sealer", [None])
async def test_without_keys_no_token_is_kept(flow: SignIns, store: MemoryStore) -> None:
    signed_in = await flow.register("alice", provider_token=GOOGLE_TOKEN)
    assert await store.provider_tokens.for_account(signed_in.account.id) == []


async def test_a_refused_sign_in_keeps_no_token(flow: SignIns, store: MemoryStore) -> None:
    alice = await flow.caller(await flow.register("alice"))
    await flow.register("bob", "apple")
    taken = verified("apple", "bob", provider_token=APPLE_TOKEN)
    with pytest.raises(errors.IdentityLinkedElsewhere):
        await flow.sign_in(taken, intent=Intent.LINK, caller=alice)
    assert await store.provider_tokens.for_account(alice.account_id) == []


# -- queued with the change -------------------------------------------------------------------


async def test_unlink_queues_the_revocation_of_that_providers_token(
    flow: SignIns, account: AccountService, store: MemoryStore, clock: FixedClock
) -> None:
    alice = await alice_with_tokens(flow)
    await account.unlink(alice, "apple")
    [pending] = await store.revocations.pending()
    assert (pending.account_id, pending.identity.provider) == (alice.account_id, "apple")
    assert pending.attempts == 0 and pending.next_attempt_at == clock.now()
    kept = await store.provider_tokens.for_account(alice.account_id)
    assert [t.identity.provider for t in kept] == ["google"]


async def test_a_refused_unlink_queues_nothing(
    flow: SignIns, account: AccountService, store: MemoryStore
) -> None:
    alice = await flow.caller(await flow.register("alice", provider_token=GOOGLE_TOKEN))
    with pytest.raises(errors.LastIdentity):
        await account.unlink(alice, "google")
    assert await store.revocations.pending() == []
    assert len(await store.provider_tokens.for_account(alice.account_id)) == 1


async def test_delete_queues_every_token_of_the_account(
    flow: SignIns, account: AccountService, store: MemoryStore
) -> None:
    alice = await alice_with_tokens(flow)
    await account.delete(alice)
    pending = await store.revocations.pending()
    assert sorted(p.identity.provider for p in pending) == ["apple", "google"]
    assert await store.provider_tokens.for_account(alice.account_id) == []


# -- processed by the worker ------------------------------------------------------------------


async def test_the_worker_revokes_a_queued_token_at_its_provider(
    flow: SignIns,
    account: AccountService,
    worker: RevocationWorker,
    revokers: dict[str, FakeRevoker],
    store: MemoryStore,
) -> None:
    alice = await alice_with_tokens(flow)
    await account.unlink(alice, "apple")
    assert await worker.run_once() == 1
    assert revokers["apple"].received == [APPLE_TOKEN] and revokers["google"].received == []
    assert await store.revocations.pending() == []
    event = (await store.events.for_account(alice.account_id))[0]
    assert (event.outcome, event.provider) == (Outcome.PROVIDER_TOKEN_REVOKED, "apple")
    assert event.detail == "after 1 attempt(s)"
    assert APPLE_TOKEN.value not in repr(await store.events.recent())
    assert await worker.run_once() == 0  # sent once


async def test_a_failed_revocation_is_retried_later_until_it_succeeds(
    flow: SignIns,
    account: AccountService,
    worker: RevocationWorker,
    revokers: dict[str, FakeRevoker],
    store: MemoryStore,
    clock: FixedClock,
) -> None:
    revokers["apple"].answers = [RevocationFailed("503"), RevocationFailed("503")]
    alice = await alice_with_tokens(flow)
    await account.unlink(alice, "apple")

    await worker.run_once()
    [pending] = await store.revocations.pending()
    assert pending.attempts == 1
    wait = pending.next_attempt_at - clock.now()
    assert dt.timedelta(seconds=8) <= wait <= dt.timedelta(seconds=10)  # 10 s, less jitter
    assert await worker.run_once() == 0  # not due yet

    clock.advance(seconds=10)
    await worker.run_once()
    [pending] = await store.revocations.pending()
    assert pending.attempts == 2
    wait = pending.next_attempt_at - clock.now()
    assert dt.timedelta(seconds=16) <= wait <= dt.timedelta(seconds=20)  # doubled

    clock.advance(seconds=20)
    await worker.run_once()
    assert await store.revocations.pending() == []
    assert revokers["apple"].received == [APPLE_TOKEN] * 3
    event = (await store.events.for_account(alice.account_id))[0]
    assert event.outcome is Outcome.PROVIDER_TOKEN_REVOKED
    assert event.detail == "after 3 attempt(s)"


async def test_a_token_the_provider_no_longer_knows_counts_as_revoked(
    flow: SignIns,
    account: AccountService,
    worker: RevocationWorker,
    revokers: dict[str, FakeRevoker],
    store: MemoryStore,
) -> None:
    revokers["apple"].answers = [Revoked.ALREADY_INVALID]
    alice = await alice_with_tokens(flow)
    await account.unlink(alice, "apple")
    await worker.run_once()
    assert await store.revocations.pending() == []
    event = (await store.events.for_account(alice.account_id))[0]
    assert event.outcome is Outcome.PROVIDER_TOKEN_REVOKED
    assert event.detail is not None and "no longer knew" in event.detail


async def test_a_revocation_failing_past_the_maximum_age_is_given_up(
    flow: SignIns,
    account: AccountService,
    worker: RevocationWorker,
    revokers: dict[str, FakeRevoker],
    store: MemoryStore,
    clock: FixedClock,
) -> None:
    revokers["apple"].answers = [RevocationFailed("503")] * 100
    alice = await alice_with_tokens(flow)
    await account.unlink(alice, "apple")
    await worker.run_once()
    assert len(await store.revocations.pending()) == 1
    clock.advance(days=1)
    await worker.run_once()
    assert await store.revocations.pending() == []
    event = (await store.events.for_account(alice.account_id))[0]
    assert event.outcome is Outcome.PROVIDER_TOKEN_REVOCATION_FAILED
    assert event.detail is not None and event.detail.startswith("given up after 2 attempt(s)")


@pytest.mark.parametrize("revokers", [{}])
async def test_a_revocation_for_a_provider_no_longer_configured_is_given_up(
    flow: SignIns, account: AccountService, worker: RevocationWorker, store: MemoryStore
) -> None:
    alice = await alice_with_tokens(flow)
    await account.unlink(alice, "apple")
    await worker.run_once()
    assert await store.revocations.pending() == []
    assert (await outcomes(store, alice.account_id))[0] is Outcome.PROVIDER_TOKEN_REVOCATION_FAILED
