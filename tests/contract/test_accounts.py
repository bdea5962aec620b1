"""The AccountRepository contract, run against every adapter (fixture ``store``)."""

from __future__ import annotations

import asyncio

import attrs
import pytest

from authgate.domain.model import ProviderIdentity, VerifiedIdentity
from authgate.ports.accounts import IdentityTaken, LastIdentityError
from tests.support.records import T0, at, verified
from tests.support.stores import Store

UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"


async def test_create_stores_a_new_account_with_its_primary_identity(store: Store) -> None:
    v = verified("google", "g-1", email="ann@example.com", name="Ann")
    account, created = await store.accounts.create_with_identity(v, T0)

    assert created is True
    assert (account.email, account.name, account.created_at) == ("ann@example.com", "Ann", T0)
    assert account.last_login_at is None
    assert await store.accounts.get(account.id) == account
    assert await store.accounts.find_by_identity(v.identity) == account
    [linked] = await store.accounts.list_identities(account.id)
    assert linked.account_id == account.id
    assert linked.identity == ProviderIdentity("google", "g-1")
    assert (linked.email, linked.linked_at, linked.is_primary) == ("ann@example.com", T0, True)


async def test_create_of_a_known_identity_returns_its_account(store: Store) -> None:
    first, _ = await store.accounts.create_with_identity(verified(subject="s"), T0)
    again, created = await store.accounts.create_with_identity(verified(subject="s"), at(60))
    assert created is False
    assert again == first
    assert len(await store.accounts.list_identities(first.id)) == 1


async def test_concurrent_first_sign_ins_of_one_identity_create_one_account(
    store: Store,
) -> None:
    v = verified("apple", "race")
    results = await asyncio.gather(
        *(store.accounts.create_with_identity(v, at(i / 1000)) for i in range(50))
    )
    assert sum(created for _, created in results) == 1
    assert len({account.id for account, _ in results}) == 1
    account = results[0][0]
    assert await store.accounts.find_by_identity(v.identity) == account
    assert [i.is_primary for i in await store.accounts.list_identities(account.id)] == [True]


async def test_concurrent_first_sign_ins_of_different_identities(store: Store) -> None:
    results = await asyncio.gather(
        *(store.accounts.create_with_identity(verified(subject=f"u{i}"), T0) for i in range(20))
    )
    assert all(created for _, created in results)
    assert len({account.id for account, _ in results}) == 20


async def test_unknown_identity_and_account(store: Store) -> None:
    assert await store.accounts.find_by_identity(ProviderIdentity("google", "nobody")) is None
    assert await store.accounts.get(UNKNOWN_ID) is None
    assert await store.accounts.get("not-an-account-id") is None
    assert await store.accounts.list_identities(UNKNOWN_ID) == []


async def test_identity_key_is_provider_and_subject(store: Store) -> None:
    a, _ = await store.accounts.create_with_identity(verified("google", "42"), T0)
    b, created = await store.accounts.create_with_identity(verified("facebook", "42"), T0)
    assert created is True
    assert a.id != b.id


async def test_link_adds_a_secondary_identity(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(verified("google", "g"), T0)
    fb = verified("facebook", "f", email="ann@fb.example")
    await store.accounts.link_identity(account.id, fb, at(30))

    assert await store.accounts.find_by_identity(fb.identity) == account
    identities = await store.accounts.list_identities(account.id)
    assert [(i.identity.provider, i.is_primary, i.linked_at) for i in identities] == [
        ("google", True, T0),
        ("facebook", False, at(30)),
    ]
    assert identities[1].email == "ann@fb.example"


async def test_link_is_idempotent_for_the_accounts_own_identity(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(verified("google", "g"), T0)
    await store.accounts.link_identity(account.id, verified("apple", "a"), at(1))
    await store.accounts.link_identity(account.id, verified("apple", "a"), at(2))
    await store.accounts.link_identity(account.id, verified("google", "g"), at(3))
    identities = await store.accounts.list_identities(account.id)
    assert [(i.identity.provider, i.linked_at) for i in identities] == [
        ("google", T0),
        ("apple", at(1)),
    ]


async def test_link_of_another_accounts_identity_raises_identity_taken(store: Store) -> None:
    ann, _ = await store.accounts.create_with_identity(verified("google", "ann"), T0)
    bob, _ = await store.accounts.create_with_identity(verified("facebook", "bob"), T0)
    with pytest.raises(IdentityTaken):
        await store.accounts.link_identity(ann.id, verified("facebook", "bob"), at(1))
    assert await store.accounts.find_by_identity(ProviderIdentity("facebook", "bob")) == bob
    assert len(await store.accounts.list_identities(ann.id)) == 1


async def test_concurrent_links_of_one_identity_to_two_accounts(store: Store) -> None:
    ann, _ = await store.accounts.create_with_identity(verified("google", "ann"), T0)
    bob, _ = await store.accounts.create_with_identity(verified("google", "bob"), T0)
    contested = verified("apple", "shared")
    owners = [ann, bob] * 10
    results = await asyncio.gather(
        *(store.accounts.link_identity(o.id, contested, at(1)) for o in owners),
        return_exceptions=True,
    )
    holder = await store.accounts.find_by_identity(contested.identity)
    assert holder is not None
    for owner, result in zip(owners, results, strict=True):
        if owner.id == holder.id:
            assert result is None
        else:
            assert isinstance(result, IdentityTaken)
    loser = bob if holder.id == ann.id else ann
    assert len(await store.accounts.list_identities(loser.id)) == 1


async def test_link_to_an_unknown_account_raises_key_error(store: Store) -> None:
    with pytest.raises(KeyError):
        await store.accounts.link_identity(UNKNOWN_ID, verified("google", "x"), T0)
    assert await store.accounts.find_by_identity(ProviderIdentity("google", "x")) is None


async def test_unlink_removes_an_identity_but_never_the_last(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(verified("google", "g"), T0)
    await store.accounts.link_identity(account.id, verified("facebook", "f"), at(1))

    assert await store.accounts.unlink_identity(account.id, "apple") is False
    assert await store.accounts.unlink_identity(account.id, "google") is True
    assert await store.accounts.find_by_identity(ProviderIdentity("google", "g")) is None
    with pytest.raises(LastIdentityError):
        await store.accounts.unlink_identity(account.id, "facebook")
    [left] = await store.accounts.list_identities(account.id)
    assert left.identity == ProviderIdentity("facebook", "f")
    assert await store.accounts.get(account.id) == account


async def test_unlink_on_an_unknown_account_is_false(store: Store) -> None:
    assert await store.accounts.unlink_identity(UNKNOWN_ID, "google") is False
    assert await store.accounts.unlink_identity("not-an-account-id", "google") is False


async def test_concurrent_unlinks_leave_one_identity(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(verified("google", "g"), T0)
    await store.accounts.link_identity(account.id, verified("facebook", "f"), at(1))
    results = await asyncio.gather(
        store.accounts.unlink_identity(account.id, "google"),
        store.accounts.unlink_identity(account.id, "facebook"),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["LastIdentityError", "bool"]
    assert len(await store.accounts.list_identities(account.id)) == 1


async def test_an_unlinked_identity_may_be_linked_elsewhere(store: Store) -> None:
    ann, _ = await store.accounts.create_with_identity(verified("google", "ann"), T0)
    await store.accounts.link_identity(ann.id, verified("apple", "a"), at(1))
    bob, _ = await store.accounts.create_with_identity(verified("google", "bob"), T0)
    assert await store.accounts.unlink_identity(ann.id, "apple") is True
    await store.accounts.link_identity(bob.id, verified("apple", "a"), at(2))
    assert await store.accounts.find_by_identity(ProviderIdentity("apple", "a")) == bob


async def test_list_identities_oldest_link_first(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(verified("google", "g"), at(10))
    await store.accounts.link_identity(account.id, verified("apple", "a"), at(30))
    await store.accounts.link_identity(account.id, verified("facebook", "f"), at(20))
    identities = await store.accounts.list_identities(account.id)
    assert [i.identity.provider for i in identities] == ["google", "facebook", "apple"]
    assert [i.is_primary for i in identities] == [True, False, False]


async def test_list_identities_puts_the_primary_first_on_a_tie(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(verified("google", "g"), T0)
    await store.accounts.link_identity(account.id, verified("apple", "a"), T0)
    identities = await store.accounts.list_identities(account.id)
    assert [i.is_primary for i in identities] == [True, False]


async def test_record_login_sets_last_login(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(verified(), T0)
    await store.accounts.record_login(account.id, at(5))
    got = await store.accounts.get(account.id)
    assert got is not None
    assert got.last_login_at == at(5)
    assert got.created_at == T0
    await store.accounts.record_login(account.id, at(9))
    found = await store.accounts.find_by_identity(verified().identity)
    assert found is not None
    assert found.last_login_at == at(9)


async def test_record_login_of_an_unknown_account_does_nothing(store: Store) -> None:
    await store.accounts.record_login(UNKNOWN_ID, T0)
    await store.accounts.record_login("not-an-account-id", T0)
    assert await store.accounts.get(UNKNOWN_ID) is None


async def test_optional_fields_may_be_absent(store: Store) -> None:
    v = VerifiedIdentity(identity=ProviderIdentity("apple", "private"))
    account, _ = await store.accounts.create_with_identity(v, T0)
    assert (account.email, account.name) == (None, None)
    assert await store.accounts.get(account.id) == account
    [linked] = await store.accounts.list_identities(account.id)
    assert linked.email is None


async def test_text_is_stored_as_given(store: Store) -> None:
    odd = "Zoë 'O\"Brien'; DROP TABLE accounts; -- 名前 \\ %_"
    v = verified("google", odd, email=f"{odd}@example.com", name=odd)
    account, _ = await store.accounts.create_with_identity(v, T0)
    assert account.name == odd
    assert await store.accounts.find_by_identity(ProviderIdentity("google", odd)) == account
    assert (await store.accounts.get(account.id)) == account


# -- email_verified: True only when the provider said so -------------------------------------


@pytest.mark.parametrize(("said", "stored"), [(True, True), (False, False), (None, False)])
async def test_create_stores_whether_the_provider_verified_the_email(
    store: Store, said: bool | None, stored: bool
) -> None:
    # None is a provider that did not say (the facebook shape): never stored as verified.
    v = attrs.evolve(verified("facebook", f"ev-{said}"), email_verified=said)
    account, _ = await store.accounts.create_with_identity(v, T0)
    assert account.email_verified is stored
    for read in (
        await store.accounts.get(account.id),
        await store.accounts.find_by_identity(v.identity),
    ):
        assert read is not None and read.email_verified is stored
        assert read == account
    [linked] = await store.accounts.list_identities(account.id)
    assert linked.email_verified is stored


async def test_a_verified_flag_without_an_email_is_not_stored_as_verified(store: Store) -> None:
    v = VerifiedIdentity(identity=ProviderIdentity("google", "no-mail"), email_verified=True)
    account, _ = await store.accounts.create_with_identity(v, T0)
    assert (account.email, account.email_verified) == (None, False)
    assert await store.accounts.get(account.id) == account
    [linked] = await store.accounts.list_identities(account.id)
    assert linked.email_verified is False


async def test_link_keeps_each_identitys_flag_and_the_accounts_own(store: Store) -> None:
    primary = verified("google", "g-ev", email="ann@example.com")  # verified: True
    account, _ = await store.accounts.create_with_identity(primary, T0)
    fb = attrs.evolve(verified("facebook", "f-ev", email="ann@fb.example"), email_verified=None)
    apple = attrs.evolve(verified("apple", "a-ev"), email_verified=False)
    await store.accounts.link_identity(account.id, fb, at(1))
    await store.accounts.link_identity(account.id, apple, at(2))
    identities = await store.accounts.list_identities(account.id)
    assert [(i.identity.provider, i.email_verified) for i in identities] == [
        ("google", True),
        ("facebook", False),
        ("apple", False),
    ]
    # Linking an unverified address changes neither the account's email nor its flag.
    assert await store.accounts.get(account.id) == account
    assert (account.email, account.email_verified) == ("ann@example.com", True)

    unverified, _ = await store.accounts.create_with_identity(
        attrs.evolve(verified("facebook", "f-first"), email_verified=None), T0
    )
    await store.accounts.link_identity(unverified.id, verified("google", "g-later"), at(1))
    assert [i.email_verified for i in await store.accounts.list_identities(unverified.id)] == [
        False,
        True,
    ]
    # A verified secondary identity does not make the primary email verified.
    again = await store.accounts.get(unverified.id)
    assert again is not None and again.email_verified is False


async def test_find_by_email_matches_the_account_and_its_identities_ignoring_case(
    store: Store,
) -> None:
    ann, _ = await store.accounts.create_with_identity(
        verified("google", "g-ann", email="Ann@Example.com"), T0
    )
    await store.accounts.link_identity(
        ann.id, verified("facebook", "f-ann", email="ann@fb.example"), at(10)
    )
    bob, _ = await store.accounts.create_with_identity(
        verified("google", "g-bob", email="bob@example.com"), at(20)
    )
    # A second account with Ann's address (another provider, not linked): both are found.
    other, _ = await store.accounts.create_with_identity(
        verified("apple", "a-ann", email="ann@example.com"), at(30)
    )

    assert await store.accounts.find_by_email("ann@example.com") == [ann, other]
    assert await store.accounts.find_by_email("ANN@FB.EXAMPLE") == [ann]
    assert await store.accounts.find_by_email("bob@example.com") == [bob]
    assert await store.accounts.find_by_email("nobody@example.com") == []


async def test_find_by_email_forgets_a_deleted_account(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(
        verified("google", "g-del", email="gone@example.com"), T0
    )
    await store.accounts.delete(account.id)
    assert await store.accounts.find_by_email("gone@example.com") == []


async def test_find_with_identity_reads_the_identity_and_its_account_at_once(store: Store) -> None:
    first = verified("google", "g-1", email="ann@example.com", name="Ann")
    account, _ = await store.accounts.create_with_identity(first, T0)
    second = attrs.evolve(
        verified("facebook", "f-1", email="other@example.com"), email_verified=False
    )
    await store.accounts.link_identity(account.id, second, at(60))
    await store.accounts.record_login(account.id, at(120))
    await store.accounts.set_identity_disabled(second.identity, "hijacking")

    found = await store.accounts.find_with_identity(second.identity)
    assert found is not None
    linked, holder = found
    # the identity's own email and state, the account's own
    assert linked == await store.accounts.get_identity(second.identity)
    assert (linked.email, linked.email_verified, linked.disabled_reason) == (
        "other@example.com",
        False,
        "hijacking",
    )
    assert holder == await store.accounts.find_by_identity(second.identity)
    assert (holder.id, holder.email, holder.last_login_at) == (
        account.id,
        "ann@example.com",
        at(120),
    )
    assert await store.accounts.find_with_identity(ProviderIdentity("google", "nobody")) is None
