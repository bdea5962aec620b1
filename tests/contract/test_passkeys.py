"""The PasskeyStore and PasskeyChallenges contracts, run against every adapter (``store``).

A passkey is a sign-in method of an account beside its identities: the last-sign-in-method
rule counts both, and an account's deletion takes its passkeys with it."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import attrs
import pytest

from authgate.adapters.memory import MemoryPasskeyChallenges
from authgate.domain.passkeys import Ceremony, Passkey, PasskeyChallenge
from authgate.ports.accounts import LastIdentityError
from authgate.ports.passkeys import ChallengeStoreFull, PasskeyTaken, PasskeyUseNotRecorded
from tests.support.records import T0, at, verified
from tests.support.stores import Store

BROWSER_A = "a" * 64
BROWSER_B = "b" * 64


def passkey(account_id: str, n: int = 1, **kw: object) -> Passkey:
    fields: dict[str, object] = {
        "id": uuid.uuid4().hex,
        "account_id": account_id,
        "credential_id": bytes([n]) * 32,
        "public_key": b"\xa5\x01\x02\x03\x26" + bytes([n]) * 64,
        "sign_count": 0,
        "transports": ("internal", "hybrid"),
        "aaguid": "00000000-0000-0000-0000-000000000000",
        "backup_eligible": True,
        "backed_up": False,
        "name": f"Passkey {n}",
        "created_at": at(n),
    }
    fields.update(kw)
    return Passkey(**fields)  # type: ignore[arg-type]


def challenge(
    browser: str = BROWSER_A,
    ceremony: Ceremony = Ceremony.AUTHENTICATION,
    created: dt.datetime = T0,
    value: bytes = b"c" * 32,
    **kw: object,
) -> PasskeyChallenge:
    return PasskeyChallenge(
        binding_hash=browser,
        ceremony=ceremony,
        challenge=value,
        created_at=created,
        expires_at=created + dt.timedelta(minutes=5),
        **kw,  # type: ignore[arg-type]
    )


async def account(store: Store, subject: str = "1") -> str:
    created, _ = await store.accounts.create_with_identity(verified("google", subject), T0)
    return created.id


async def test_a_passkey_round_trips(store: Store) -> None:
    owner = await account(store)
    kept = passkey(owner, transports=("usb",), backed_up=True, last_used_at=at(9))
    await store.passkeys.add(kept)
    assert await store.passkeys.get(owner, kept.id) == kept
    assert await store.passkeys.find_by_credential(kept.credential_id) == kept
    assert await store.passkeys.for_account(owner) == [kept]


async def test_a_passkey_keeps_where_it_was_added(store: Store) -> None:
    owner = await account(store)
    kept = passkey(
        owner,
        added_by_session="s-1",
        added_from_address="203.0.113.9",
        added_from_user_agent="Mozilla/5.0 ünï",
    )
    await store.passkeys.add(kept)
    assert await store.passkeys.get(owner, kept.id) == kept
    [listed] = await store.passkeys.for_account(owner)
    assert (listed.added_by_session, listed.added_from_address) == ("s-1", "203.0.113.9")
    assert listed.added_from_user_agent == "Mozilla/5.0 ünï"


async def test_passkeys_are_listed_oldest_first_per_account(store: Store) -> None:
    owner, other = await account(store, "1"), await account(store, "2")
    second, first = passkey(owner, 2), passkey(owner, 1)
    await store.passkeys.add(second)
    await store.passkeys.add(first)
    await store.passkeys.add(passkey(other, 3))
    assert await store.passkeys.for_account(owner) == [first, second]


async def test_a_credential_id_is_kept_once_across_accounts(store: Store) -> None:
    owner, other = await account(store, "1"), await account(store, "2")
    await store.passkeys.add(passkey(owner, 1))
    with pytest.raises(PasskeyTaken):
        await store.passkeys.add(passkey(other, 1))
    assert await store.passkeys.for_account(other) == []


async def test_another_accounts_passkey_is_not_found_by_id(store: Store) -> None:
    owner, other = await account(store, "1"), await account(store, "2")
    kept = passkey(owner)
    await store.passkeys.add(kept)
    assert await store.passkeys.get(other, kept.id) is None
    assert await store.passkeys.rename(other, kept.id, "mine now") is None
    assert await store.passkeys.delete(other, kept.id) is False
    assert await store.passkeys.get(owner, kept.id) == kept


async def test_rename_and_record_use(store: Store) -> None:
    owner = await account(store)
    kept = passkey(owner)
    await store.passkeys.add(kept)
    renamed = await store.passkeys.rename(owner, kept.id, "Laptop")
    assert renamed == attrs.evolve(kept, name="Laptop")
    await store.passkeys.record_use(kept.id, 7, True, at(60))
    assert await store.passkeys.get(owner, kept.id) == attrs.evolve(
        kept, name="Laptop", sign_count=7, backed_up=True, last_used_at=at(60)
    )


async def test_deleting_the_account_deletes_its_passkeys(store: Store) -> None:
    owner, other = await account(store, "1"), await account(store, "2")
    mine, theirs = passkey(owner, 1), passkey(other, 2)
    await store.passkeys.add(mine)
    await store.passkeys.add(theirs)
    async with store.units.begin() as tx:
        assert await tx.accounts.delete(owner)
    assert await store.passkeys.find_by_credential(mine.credential_id) is None
    assert await store.passkeys.for_account(owner) == []
    assert await store.passkeys.for_account(other) == [theirs]


async def test_the_last_passkey_of_an_account_without_identity_stays(store: Store) -> None:
    owner = await account(store)
    first, second = passkey(owner, 1), passkey(owner, 2)
    await store.passkeys.add(first)
    await store.passkeys.add(second)
    async with store.units.begin() as tx:
        assert await tx.accounts.unlink_identity(owner, "google") is True  # a passkey remains
    assert await store.accounts.list_identities(owner) == []
    assert await store.passkeys.delete(owner, first.id) is True
    with pytest.raises(LastIdentityError):
        await store.passkeys.delete(owner, second.id)
    assert await store.passkeys.for_account(owner) == [second]


async def test_the_last_identity_goes_only_while_a_passkey_remains(store: Store) -> None:
    owner = await account(store)
    with pytest.raises(LastIdentityError):
        await store.accounts.unlink_identity(owner, "google")
    kept = passkey(owner)
    await store.passkeys.add(kept)
    assert await store.passkeys.delete(owner, kept.id) is True  # the identity remains
    with pytest.raises(LastIdentityError):
        await store.accounts.unlink_identity(owner, "google")
    assert len(await store.accounts.list_identities(owner)) == 1


async def test_a_unit_that_fails_keeps_no_passkey(store: Store) -> None:
    owner = await account(store)
    with pytest.raises(RuntimeError):
        async with store.units.begin() as tx:
            await tx.passkeys.add(passkey(owner))
            raise RuntimeError("rolled back")
    assert await store.passkeys.for_account(owner) == []


async def test_a_unit_writes_a_passkey_use(store: Store) -> None:
    owner = await account(store)
    kept = passkey(owner)
    await store.passkeys.add(kept)
    async with store.units.begin() as tx:
        found = await tx.passkeys.find_by_credential(kept.credential_id)
        assert found == kept
        await tx.passkeys.record_use(kept.id, 3, False, at(30))
    stored = await store.passkeys.get(owner, kept.id)
    assert stored is not None and (stored.sign_count, stored.last_used_at) == (3, at(30))


async def test_a_sign_in_reads_the_passkey_and_whether_its_account_is_disabled(
    store: Store,
) -> None:
    owner = await account(store)
    kept = passkey(owner)
    await store.passkeys.add(kept)
    assert await store.passkeys.find_for_sign_in(kept.credential_id) == (kept, False)
    assert await store.passkeys.find_for_sign_in(b"\x09" * 32) is None
    identity = verified("google", "1").identity
    assert await store.accounts.set_identity_disabled(identity, "account-disabled")
    assert await store.passkeys.find_for_sign_in(kept.credential_id) == (kept, True)
    assert await store.accounts.set_identity_disabled(identity, None)
    assert await store.passkeys.find_for_sign_in(kept.credential_id) == (kept, False)


async def test_a_use_is_recorded_only_while_the_counter_advances(store: Store) -> None:
    owner = await account(store)
    kept = passkey(owner)
    await store.passkeys.add(kept)
    # An authenticator that keeps no counter reports 0 each time: allowed while both are 0.
    assert await store.passkeys.record_use(kept.id, 0, False, at(1)) is True
    assert await store.passkeys.record_use(kept.id, 0, False, at(2)) is True
    assert await store.passkeys.record_use(kept.id, 5, True, at(3)) is True
    for behind in (5, 4, 0):  # the same, lower, or back to 0: a copy or a replay
        assert await store.passkeys.record_use(kept.id, behind, False, at(4)) is False
    assert await store.passkeys.get(owner, kept.id) == attrs.evolve(
        kept, sign_count=5, backed_up=True, last_used_at=at(3)
    )
    assert await store.passkeys.record_use(uuid.uuid4().hex, 9, False, at(5)) is False


async def test_concurrent_uses_with_one_counter_value_record_it_once(store: Store) -> None:
    owner = await account(store)
    kept = passkey(owner, sign_count=4)
    await store.passkeys.add(kept)

    async def use(n: int) -> bool:
        # False now, or (a unit that sends its writes together) PasskeyUseNotRecorded at its end
        try:
            async with store.units.begin() as tx:
                await tx.passkeys.find_for_sign_in(kept.credential_id)  # as a sign-in reads it
                return await tx.passkeys.record_use(kept.id, 5, False, at(n))
        except PasskeyUseNotRecorded:
            return False

    outcomes = await asyncio.gather(*(use(n) for n in range(8)))
    assert outcomes.count(True) == 1, outcomes
    stored = await store.passkeys.get(owner, kept.id)
    assert stored is not None and stored.sign_count == 5


# -- challenges ------------------------------------------------------------------------------


async def test_a_challenge_is_taken_once(store: Store) -> None:
    kept = challenge(account_id="acc", session_id="sid")
    await store.passkey_challenges.put(kept)
    assert await store.passkey_challenges.take(BROWSER_A, Ceremony.AUTHENTICATION, at(1)) == kept
    assert await store.passkey_challenges.take(BROWSER_A, Ceremony.AUTHENTICATION, at(2)) is None


async def test_a_challenge_is_bound_to_its_browser_and_ceremony(store: Store) -> None:
    kept = challenge(ceremony=Ceremony.REGISTRATION)
    await store.passkey_challenges.put(kept)
    assert await store.passkey_challenges.take(BROWSER_B, Ceremony.REGISTRATION, at(1)) is None
    assert await store.passkey_challenges.take(BROWSER_A, Ceremony.AUTHENTICATION, at(1)) is None
    assert await store.passkey_challenges.take(BROWSER_A, Ceremony.REGISTRATION, at(1)) == kept


async def test_a_newer_challenge_replaces_the_browsers_older_one(store: Store) -> None:
    await store.passkey_challenges.put(challenge(value=b"1" * 32))
    await store.passkey_challenges.put(challenge(value=b"2" * 32, created=at(10)))
    await store.passkey_challenges.put(challenge(BROWSER_B, value=b"3" * 32))
    taken = await store.passkey_challenges.take(BROWSER_A, Ceremony.AUTHENTICATION, at(11))
    assert taken is not None and taken.challenge == b"2" * 32
    other = await store.passkey_challenges.take(BROWSER_B, Ceremony.AUTHENTICATION, at(11))
    assert other is not None and other.challenge == b"3" * 32


async def test_an_expired_challenge_is_not_returned_and_is_purged(store: Store) -> None:
    await store.passkey_challenges.put(challenge())
    await store.passkey_challenges.put(challenge(BROWSER_B))
    assert await store.passkey_challenges.take(BROWSER_A, Ceremony.AUTHENTICATION, at(300)) is None
    assert await store.passkey_challenges.purge_expired(at(300)) == 1
    assert await store.passkey_challenges.take(BROWSER_B, Ceremony.AUTHENTICATION, at(1)) is None


async def test_concurrent_takes_get_a_challenge_once(store: Store) -> None:
    await store.passkey_challenges.put(challenge())
    taken = await asyncio.gather(
        *(
            store.passkey_challenges.take(BROWSER_A, Ceremony.AUTHENTICATION, at(1))
            for _ in range(5)
        )
    )
    assert sum(t is not None for t in taken) == 1


async def test_a_full_memory_store_refuses_new_challenges_but_keeps_live_ones() -> None:
    challenges = MemoryPasskeyChallenges(max_entries=2)
    await challenges.put(challenge("1" * 64))
    await challenges.put(challenge("2" * 64))
    with pytest.raises(ChallengeStoreFull):
        await challenges.put(challenge("3" * 64, created=at(10)))
    await challenges.put(challenge("2" * 64, created=at(20)))  # a browser replacing its own
    await challenges.put(challenge("3" * 64, created=at(301)))  # the first one expired: room
    assert await challenges.take("1" * 64, Ceremony.AUTHENTICATION, at(302)) is None
    assert await challenges.take("3" * 64, Ceremony.AUTHENTICATION, at(302)) is not None
