"""Transaction.sign_in_to_holder, run against every adapter (fixture ``store``): a login's
look-up and its writes for the account holding the identity, nothing written otherwise. On
PostgreSQL it is one statement (tests/storage/test_postgres_login.py counts it)."""

from __future__ import annotations

import pytest

from authgate.domain.model import (
    Outcome,
    ProviderIdentity,
    SealedToken,
    SessionRecord,
    StoredProviderToken,
)
from authgate.ports.unit_of_work import HolderWrites
from tests.support.records import T0, at, event, verified
from tests.support.stores import Store


def writes(sid: str, identity: ProviderIdentity, *, sealed: bool = False) -> HolderWrites:
    session = SessionRecord(
        id=sid,
        account_id="",
        provider=identity.provider,
        created_at=at(5),
        expires_at=at(3600),
        absolute_expires_at=at(86400),
        auth_time=at(5),
        client_address="203.0.113.7",
        user_agent="Mozilla/5.0",
        provider_session="op-sid-1",
    )
    token = (
        StoredProviderToken("", identity, SealedToken("k1", "ciphertext"), at(5))
        if sealed
        else None
    )
    return HolderWrites(session, event(5, Outcome.SIGNED_IN), token)


@pytest.mark.parametrize("sealed", [False, True])
async def test_a_held_identity_signs_in_with_every_write_for_its_account(
    store: Store, sealed: bool
) -> None:
    who = verified(subject="held-1")
    account, _ = await store.accounts.create_with_identity(who, T0)
    async with store.units.begin() as tx:
        found = await tx.sign_in_to_holder(
            who.identity, at(5), writes("s-1", who.identity, sealed=sealed)
        )
    assert found is not None
    identity, holder = found
    assert holder.id == account.id and identity.identity == who.identity
    assert holder.last_login_at == account.last_login_at  # the account as it was before
    stored = await store.accounts.get(account.id)
    assert stored is not None and stored.last_login_at == at(5)
    session = await store.sessions.get("s-1")
    assert session is not None
    assert session.account_id == account.id and session.provider_session == "op-sid-1"
    assert session.expires_at == at(3600) and session.auth_time == at(5)
    [recorded] = await store.events.for_account(account.id)
    assert recorded.outcome is Outcome.SIGNED_IN and recorded.at == at(5)
    kept = await store.provider_tokens.for_account(account.id)
    if sealed:
        assert [(t.identity, t.sealed.ciphertext) for t in kept] == [(who.identity, "ciphertext")]
    else:
        assert kept == []


async def test_an_identity_nobody_holds_writes_nothing(store: Store) -> None:
    nobody = verified(subject="nobody")
    async with store.units.begin() as tx:
        found = await tx.sign_in_to_holder(nobody.identity, at(5), writes("s-2", nobody.identity))
    assert found is None
    assert await store.sessions.get("s-2") is None
    assert await store.events.recent() == []


async def test_a_disabled_identity_is_found_and_writes_nothing(store: Store) -> None:
    who = verified(subject="disabled-1")
    account, _ = await store.accounts.create_with_identity(who, T0)
    assert await store.accounts.set_identity_disabled(who.identity, "hijacking")
    async with store.units.begin() as tx:
        found = await tx.sign_in_to_holder(
            who.identity, at(5), writes("s-3", who.identity, sealed=True)
        )
    assert found is not None and found[0].disabled_reason == "hijacking"
    stored = await store.accounts.get(account.id)
    assert stored is not None and stored.last_login_at is None
    assert await store.sessions.get("s-3") is None
    assert await store.events.recent() == []
    assert await store.provider_tokens.for_account(account.id) == []
