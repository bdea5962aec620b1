"""The provider key set cache: 24 h, refetched on an unknown kid or a bad signature, single
flight, at most once per short floor (5 s by default), a kid proved absent not fetched again for
a while, keeping the last good set."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets

import pytest
from joserfc.jwk import KeySet, RSAKey

from authgate.adapters.jose.key_sets import KeySetCache, KeySetUnavailable, Lookup
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from authgate.ports.provider_events import EventTokenRejected, EventTokenUnavailable
from tests.fakeidp import FakeIdP, FakeUser, SettableClock, Tamper
from tests.fakeidp.events import EventFault, logout_token
from tests.identity.conftest import MakeAdapter, sign_in
from tests.support.waiting import eventually

DAY = 86400
FLOOR = 5  # the default jwks_min_refetch_seconds


def forged_logout_token(fake: FakeIdP, kid: str | None = None) -> str:
    """A logout token signed by a key google does not publish (a new kid unless given)."""
    return logout_token(fake.google, sub="x", kid=kid or f"forged-{secrets.token_hex(4)}")


async def test_one_fetch_for_many_verifications(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    adapter = make_adapter("google")
    for i in range(5):
        await sign_in(adapter, fake_idp, as_user=FakeUser(sub=f"user-{i}"))
    nonce = "n"
    tokens = [fake_idp.google.mint_id_token(nonce=nonce) for _ in range(20)]
    await asyncio.gather(*(adapter.verify_id_token(t, nonce=nonce) for t in tokens))
    assert fake_idp.google.hits["jwks"] == 1
    assert fake_idp.google.hits["openid-configuration"] == 1


async def test_refetched_after_24_hours(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    await sign_in(adapter, fake_idp)
    idp_clock.advance(DAY - 10)
    await sign_in(adapter, fake_idp)
    assert fake_idp.google.hits["jwks"] == 1
    idp_clock.advance(20)
    await sign_in(adapter, fake_idp)
    assert fake_idp.google.hits["jwks"] == 2


@pytest.mark.parametrize("provider", ["google", "apple"])
async def test_refetched_on_rotation(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock, provider: str
) -> None:
    adapter = make_adapter(provider)
    await sign_in(adapter, fake_idp)
    fake_idp[provider].rotate_keys()
    idp_clock.advance(FLOOR)
    verified = await sign_in(adapter, fake_idp)
    assert verified.identity.provider == provider
    assert fake_idp[provider].hits["jwks"] == 2


async def test_rotation_within_the_floor_waits_for_the_floor(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    # A genuine ID token never fails because a fetch happened a moment ago: its verification
    # waits for the floor, then fetches.
    adapter = make_adapter("google")
    await sign_in(adapter, fake_idp)
    fake_idp.google.rotate_keys()
    signing_in = asyncio.create_task(sign_in(adapter, fake_idp))
    await asyncio.sleep(0.3)
    assert not signing_in.done() and fake_idp.google.hits["jwks"] == 1  # waiting, not failed
    idp_clock.advance(FLOOR)
    verified = await signing_in
    assert verified.identity.provider == "google"
    assert fake_idp.google.hits["jwks"] == 2


async def test_the_wait_for_the_floor_is_bounded_by_the_floor(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    adapter = make_adapter("google", jwks_min_refetch_seconds=0.5)
    await sign_in(adapter, fake_idp)
    fake_idp.google.rotate_keys()
    started = asyncio.get_running_loop().time()
    await sign_in(adapter, fake_idp)  # the clock is not moved: real time passes the floor
    assert asyncio.get_running_loop().time() - started < 5
    assert fake_idp.google.hits["jwks"] == 2


async def test_rotation_seconds_after_an_on_demand_fetch_is_followed(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    # Issue point 2: an unknown kid made us fetch; the real rotation comes 10 s later.
    adapter = make_adapter("google")
    await sign_in(adapter, fake_idp)
    idp_clock.advance(FLOOR)
    forged = fake_idp.google.mint_id_token(nonce="n", tamper=Tamper.UNKNOWN_KID)
    with pytest.raises(VerificationFailed, match="no key"):
        await adapter.verify_id_token(forged, nonce="n")
    assert fake_idp.google.hits["jwks"] == 2
    idp_clock.advance(10)
    fake_idp.google.rotate_keys()
    await sign_in(adapter, fake_idp)
    assert fake_idp.google.hits["jwks"] == 3


async def test_an_id_token_kid_is_looked_for_by_a_fetch_of_its_own(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    # An ID token comes from the token endpoint: an earlier fetch that did not find its kid
    # proves nothing about it (the provider may have published it since).
    adapter = make_adapter("google", jwks_absent_kid_seconds=300)
    await sign_in(adapter, fake_idp)
    fake_idp.google.forged_kid = "never-published"
    forged = fake_idp.google.mint_id_token(nonce="n", tamper=Tamper.UNKNOWN_KID)
    for _ in range(3):
        idp_clock.advance(FLOOR)
        with pytest.raises(VerificationFailed, match="no key"):
            await adapter.verify_id_token(forged, nonce="n")
    assert fake_idp.google.hits["jwks"] == 4


async def test_an_event_kid_proved_absent_is_not_fetched_again_for_a_while(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google", jwks_absent_kid_seconds=300)
    verifier = adapter.logout_token_verifier(max_age_seconds=DAY)
    await verifier.keys.get()
    forged = forged_logout_token(fake_idp, "never-published")
    idp_clock.advance(FLOOR)
    with pytest.raises(EventTokenRejected, match="no key"):  # proved absent for this token
        await verifier.verify(forged)
    for _ in range(5):
        idp_clock.advance(FLOOR * 4)
        with pytest.raises(EventTokenUnavailable):  # remembered: no fetch, retry later
            await verifier.verify(forged)
    assert fake_idp.google.hits["jwks"] == 2
    idp_clock.advance(300)
    with pytest.raises(EventTokenRejected, match="no key"):
        await verifier.verify(forged)
    assert fake_idp.google.hits["jwks"] == 3  # remembered for a while, not for ever


async def test_a_kid_absent_while_the_jwks_was_down_is_not_remembered(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    await sign_in(adapter, fake_idp)
    fake_idp.google.jwks_down = True
    fake_idp.google.rotate_keys()
    idp_clock.advance(FLOOR)
    with pytest.raises(ExchangeFailed, match="could not be refreshed"):
        await sign_in(adapter, fake_idp)  # the fetch failed: an outage, not a bad token
    fake_idp.google.jwks_down = False
    idp_clock.advance(FLOOR)
    await sign_in(adapter, fake_idp)
    assert fake_idp.google.hits["jwks"] == 3


async def test_refetch_interval_is_a_setting(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    adapter = make_adapter("google", jwks_min_refetch_seconds=0)
    await sign_in(adapter, fake_idp)
    fake_idp.google.rotate_keys()
    await sign_in(adapter, fake_idp)
    assert fake_idp.google.hits["jwks"] == 2


async def test_key_replaced_under_the_same_kid_is_found_after_a_failed_signature(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    await sign_in(adapter, fake_idp)
    old_kid = fake_idp.google.kid
    assert fake_idp.google.rotate_keys(same_kid=True) == old_kid
    idp_clock.advance(FLOOR)
    await sign_in(adapter, fake_idp)
    assert fake_idp.google.hits["jwks"] == 2


async def test_bad_signature_refetches_then_fails(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    await sign_in(adapter, fake_idp)
    token = fake_idp.google.mint_id_token(nonce="n", tamper=Tamper.OTHER_KEY_SAME_KID)
    for _ in range(3):  # an ID token: a fetch of its own each time, once the floor passed
        idp_clock.advance(FLOOR)
        with pytest.raises(VerificationFailed, match="signature"):
            await adapter.verify_id_token(token, nonce="n")
    assert fake_idp.google.hits["jwks"] == 4
    # An event token: at most one fetch per floor, then refused with the cached key.
    verifier = adapter.logout_token_verifier(max_age_seconds=DAY)
    forged = logout_token(fake_idp.google, sub="x", fault=EventFault.WRONG_SIGNATURE)
    for _ in range(5):
        with pytest.raises(EventTokenRejected, match="signature"):
            await verifier.verify(forged)
    assert verifier.keys.fetches == 1


async def test_single_flight_under_20_concurrent_verifications_with_a_new_kid(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    await sign_in(adapter, fake_idp)
    fake_idp.google.rotate_keys()
    release = fake_idp.google.jwks_release = asyncio.Event()
    idp_clock.advance(FLOOR)
    tokens = [
        fake_idp.google.mint_id_token(FakeUser(sub=f"u{i}"), nonce=f"n{i}") for i in range(20)
    ]
    verifications = asyncio.gather(
        *(adapter.verify_id_token(t, nonce=f"n{i}") for i, t in enumerate(tokens))
    )
    # The refetch is held at the provider while the other verifications arrive behind it.
    await eventually(lambda: fake_idp.google.hits["jwks"] >= 2, what="the refetch")
    release.set()
    claims = await verifications
    assert [c["sub"] for c in claims] == [f"u{i}" for i in range(20)]
    assert fake_idp.google.hits["jwks"] == 2  # the first fetch and one shared refetch


async def test_single_flight_through_concurrent_exchanges(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google", pkce=False)
    g = fake_idp.google
    release = g.jwks_release = asyncio.Event()
    redirect = "http://127.0.0.1/cb"
    codes = [g.issue_code(redirect_uri=redirect, nonce=f"n{i}") for i in range(20)]
    exchanges = asyncio.gather(
        *(
            adapter.exchange(code=c, redirect_uri=redirect, code_verifier=None, nonce=f"n{i}")
            for i, c in enumerate(codes)
        )
    )
    # The first key set fetch is held at the provider until every exchange has its tokens.
    await eventually(
        lambda: g.hits["token"] == 20 and g.hits["jwks"] >= 1, what="20 token requests"
    )
    release.set()
    results = await exchanges
    assert len(results) == 20
    assert g.hits["jwks"] == 1
    assert g.hits["openid-configuration"] == 1


async def test_unknown_kid_flood_of_event_tokens_is_bounded(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    verifier = adapter.logout_token_verifier(max_age_seconds=DAY)
    await verifier.keys.get()
    idp_clock.advance(FLOOR)

    def flood() -> list[str]:  # every token with a kid of its own
        return [forged_logout_token(fake_idp) for _ in range(50)]

    refused = (EventTokenRejected, EventTokenUnavailable)
    first = flood()
    outcomes = await asyncio.gather(*(verifier.verify(t) for t in first), return_exceptions=True)
    assert all(isinstance(o, refused) for o in outcomes)
    for token in first:  # and sequentially
        with pytest.raises(refused):
            await verifier.verify(token)
    assert fake_idp.google.hits["jwks"] == 2  # the first fetch, then one refetch per floor
    for _ in range(3):  # fresh kids, concurrently and sequentially: one fetch per floor
        idp_clock.advance(FLOOR)
        tokens = flood()
        outcomes = await asyncio.gather(
            *(verifier.verify(t) for t in tokens), return_exceptions=True
        )
        assert all(isinstance(o, refused) for o in outcomes)
        for token in flood():
            with pytest.raises(refused):
                await verifier.verify(token)
    assert fake_idp.google.hits["jwks"] == 5
    # The sign-ins' own budget was not spent: a rotation is followed at once.
    fake_idp.google.rotate_keys()
    await sign_in(adapter, fake_idp)
    assert adapter.key_set.fetches == 1


async def test_last_good_set_is_kept_when_the_jwks_is_down(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    await sign_in(adapter, fake_idp)
    fake_idp.google.jwks_down = True
    idp_clock.advance(DAY + 1)  # the cached set is due for a refetch, which fails
    verified = await sign_in(adapter, fake_idp)
    assert verified.identity.provider == "google"
    assert fake_idp.google.hits["jwks"] == 2
    await sign_in(adapter, fake_idp)  # no new attempt within the floor
    assert fake_idp.google.hits["jwks"] == 2
    idp_clock.advance(FLOOR)
    fake_idp.google.rotate_keys()
    with pytest.raises(ExchangeFailed, match="could not be refreshed"):  # unknowable yet
        await sign_in(adapter, fake_idp)
    fake_idp.google.jwks_down = False
    idp_clock.advance(FLOOR)
    await sign_in(adapter, fake_idp)


async def test_no_key_set_at_all_is_an_exchange_failure(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    fake_idp.google.jwks_down = True
    with pytest.raises(ExchangeFailed, match="key set answered HTTP 500"):
        await sign_in(adapter, fake_idp)
    fake_idp.google.jwks_down = False
    # The next sign-in waits for the floor (no hammering), then fetches.
    signing_in = asyncio.create_task(sign_in(adapter, fake_idp))
    await asyncio.sleep(0.3)
    assert fake_idp.google.hits["jwks"] == 1
    idp_clock.advance(FLOOR)
    await signing_in
    assert fake_idp.google.hits["jwks"] == 2


async def test_symmetric_private_and_encryption_keys_in_the_jwks_are_ignored(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    g = fake_idp.google
    leaked = RSAKey.generate_key(2048, parameters={"kid": "leaked"}, private=True)
    g.extra_jwks = [
        {"kty": "oct", "kid": "mac", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"},
        leaked.as_dict(private=True),
        {**g.jwks()["keys"][0], "kid": "for-encryption", "use": "enc"},
        {"kty": "UNKNOWN-TYPE", "kid": "future"},
    ]
    adapter = make_adapter("google")
    await sign_in(adapter, fake_idp)
    keys = await adapter.key_set.get()
    assert {k.kid for k in keys} == {g.kid, "for-encryption"}
    assert all(k.key_type == "RSA" and not k.is_private for k in keys)
    # a token naming the encryption key is not verified with it
    token = g.mint_id_token(nonce="n")
    head, body, signature = token.split(".")
    header = json.loads(base64.urlsafe_b64decode(head + "=="))
    header["kid"] = "for-encryption"
    forged_head = base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=").decode()
    with pytest.raises(VerificationFailed):
        await adapter.verify_id_token(f"{forged_head}.{body}.{signature}", nonce="n")


# -- the cache alone, with a counting fetcher -------------------------------------------------


class CountingFetcher:
    """Counts its fetches; with ``release`` set to an Event, a fetch is in flight (and
    ``started`` is set) until the test sets it."""

    def __init__(self) -> None:
        self.calls = 0
        self.fail = False
        self.release: asyncio.Event | None = None
        self.started = asyncio.Event()
        self.key = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=False)

    async def __call__(self) -> KeySet:
        self.calls += 1
        self.started.set()
        if self.release is not None:
            await self.release.wait()
        if self.fail:
            raise KeySetUnavailable("down")
        return KeySet([self.key])


async def test_cache_single_flight_on_first_use(idp_clock: SettableClock) -> None:
    fetch = CountingFetcher()
    fetch.release = asyncio.Event()
    cache = KeySetCache(fetch, idp_clock, max_age_seconds=DAY, min_refetch_seconds=60)
    gets = asyncio.gather(*(cache.get() for _ in range(20)))
    # The first fetch is in flight; the 19 others reached the cache in the same turn of the
    # event loop (each get() runs to the lock without yielding) and wait behind it.
    await fetch.started.wait()
    fetch.release.set()
    sets = await gets
    assert fetch.calls == 1
    assert all(s is sets[0] for s in sets)


async def test_cache_forced_refresh_is_rate_limited(idp_clock: SettableClock) -> None:
    fetch = CountingFetcher()
    cache = KeySetCache(fetch, idp_clock, max_age_seconds=DAY, min_refetch_seconds=60)
    first = await cache.current()
    assert first.fresh
    assert await cache.refresh("k2") == Lookup(first.keys, fresh=False)  # within the floor
    idp_clock.advance(60)
    second = await cache.refresh("k2")
    assert second.fresh and second.keys is not first.keys
    assert fetch.calls == 2


async def test_cache_a_waiting_refresh_fetches_once_the_floor_has_passed(
    idp_clock: SettableClock,
) -> None:
    fetch = CountingFetcher()
    naps: list[float] = []

    async def sleep(seconds: float) -> None:  # the floor passes on the clock as we wait
        naps.append(seconds)
        idp_clock.advance(seconds)
        await asyncio.sleep(0)

    cache = KeySetCache(fetch, idp_clock, max_age_seconds=DAY, min_refetch_seconds=2, sleep=sleep)
    await cache.get()
    waits = await asyncio.gather(*(cache.refresh("k2", wait=True) for _ in range(10)))
    assert fetch.calls == 2  # one shared fetch after the wait
    assert all(w.fresh for w in waits)
    assert 1.9 <= sum(naps) <= 2.1


async def test_cache_failed_refresh_keeps_the_last_good_set(idp_clock: SettableClock) -> None:
    fetch = CountingFetcher()
    cache = KeySetCache(fetch, idp_clock, max_age_seconds=DAY, min_refetch_seconds=60)
    first = await cache.get()
    fetch.fail = True
    idp_clock.advance(DAY)
    assert await cache.get() is first
    assert await cache.refresh("k2") == Lookup(first, fresh=False)
    assert fetch.calls == 2


async def test_cache_without_any_set_raises(idp_clock: SettableClock) -> None:
    fetch = CountingFetcher()
    fetch.fail = True
    cache = KeySetCache(fetch, idp_clock, max_age_seconds=DAY, min_refetch_seconds=60)
    with pytest.raises(KeySetUnavailable):
        await cache.get()
    with pytest.raises(KeySetUnavailable):
        await cache.get()
    assert fetch.calls == 1
    fetch.fail = False
    idp_clock.advance(61)
    assert await cache.get()


async def test_cache_remembers_absent_kids_in_a_bounded_set(idp_clock: SettableClock) -> None:
    fetch = CountingFetcher()
    cache = KeySetCache(
        fetch,
        idp_clock,
        max_age_seconds=DAY,
        min_refetch_seconds=FLOOR,
        absent_kid_seconds=300,
        absent_kid_limit=2,
    )
    await cache.get()
    for kid in ("a", "b", "c"):  # each proved absent by a fetch of its own; "a" is forgotten
        idp_clock.advance(FLOOR)
        assert (await cache.refresh(kid)).fresh
    assert fetch.calls == 4
    idp_clock.advance(FLOOR)
    for kid in ("b", "c"):
        assert not (await cache.refresh(kid)).fresh
    assert fetch.calls == 4
    assert (await cache.refresh("a")).fresh
    assert fetch.calls == 5
    idp_clock.advance(FLOOR)
    assert (await cache.refresh("b", wait=True)).fresh  # an ID token looks for itself
    assert fetch.calls == 6


async def test_cache_a_kid_published_later_is_no_longer_absent(idp_clock: SettableClock) -> None:
    fetch = CountingFetcher()
    cache = KeySetCache(fetch, idp_clock, max_age_seconds=DAY, min_refetch_seconds=FLOOR)
    await cache.get()
    idp_clock.advance(FLOOR)
    await cache.refresh("k2")  # proved absent
    assert fetch.calls == 2
    fetch.key = RSAKey.generate_key(2048, parameters={"kid": "k2"}, private=False)
    idp_clock.advance(DAY)  # the max-age fetch publishes k2
    keys = await cache.get()
    assert fetch.calls == 3 and keys.get_by_kid("k2")
    fetch.key = RSAKey.generate_key(2048, parameters={"kid": "k3"}, private=False)
    idp_clock.advance(FLOOR)
    await cache.refresh("k2", wait=False)  # k2 is in the set: nothing to fetch
    assert fetch.calls == 3
    await cache.refresh("k4")
    keys = await cache.get()
    assert fetch.calls == 4 and not any(k.kid == "k2" for k in keys)
    idp_clock.advance(FLOOR)
    await cache.refresh("k2")  # k2 no longer remembered absent: a new fetch is allowed
    assert fetch.calls == 5


async def test_cache_a_fetch_already_in_flight_proves_no_kid_absent(
    idp_clock: SettableClock,
) -> None:
    # A fetch that started before a token arrived may predate the rotation that signed it.
    fetch = CountingFetcher()
    cache = KeySetCache(fetch, idp_clock, max_age_seconds=DAY, min_refetch_seconds=FLOOR)
    await cache.get()
    idp_clock.advance(FLOOR)
    fetch.release, fetch.started = asyncio.Event(), asyncio.Event()
    early = asyncio.create_task(cache.refresh("forged"))
    await fetch.started.wait()  # the fetch is in flight
    queued = asyncio.create_task(cache.refresh("rotated"))
    await asyncio.sleep(0)  # one turn: it notes the attempts so far and waits for the lock
    fetch.release.set()
    assert not (await queued).fresh  # within the floor: not fetched for it
    assert (await early).fresh
    assert fetch.calls == 2
    idp_clock.advance(FLOOR)
    fetch.release = None
    await cache.refresh("forged")  # remembered absent: no fetch
    assert fetch.calls == 2
    await cache.refresh("rotated")  # not proved absent: fetched once the floor passed
    assert fetch.calls == 3
