"""The stored clients' contract (:class:`~authgate.ports.stored_clients.StoredClients`) on
every adapter: a client kept and read back as it was (its metadata, its secrets' digests),
a taken client_id refused, replaced and removed; an initial access token spent once, never
after it expires; a unit that fails keeps none of it; and the removal's companions on the
other repositories (every family of the client revoked, every grant to it removed)."""

from __future__ import annotations

import datetime as dt

import attrs
import pytest

from authgate.domain.openid.clients import SecretDigest
from authgate.domain.openid.records import Grant, TokenFamily
from authgate.domain.openid.registration import (
    OPERATOR_POLICY,
    InitialAccessToken,
    StoredClient,
    read_metadata,
)
from tests.support.records import verified
from tests.support.stores import Store

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
SECRET = "a-secret-of-more-than-thirty-two-characters"


def client(client_id: str = "c-1", **metadata: object) -> StoredClient:
    document = {
        "client_name": "Agent",
        "redirect_uris": ["https://agent.example/cb", "https://agent.example/cb2"],
        "grant_types": ["authorization_code", "refresh_token", "client_credentials"],
        "scope": "openid email",
        "jwks": None,
        "backchannel_logout_uri": "https://agent.example/logout",
        "resources": ["https://api.example.com"],
        **metadata,
    }
    return StoredClient(
        client_id=client_id,
        metadata=read_metadata(document, OPERATOR_POLICY),
        origin="registration",
        created_at=NOW,
        updated_at=NOW,
        secrets=(SecretDigest.of(SECRET),),
        registration_token_hash="digest-of-the-registration-token",
    )


async def test_a_client_is_read_back_as_kept(store: Store) -> None:
    kept = client()
    async with store.units.begin() as tx:
        assert await tx.stored_clients.add(kept)
        assert not await tx.stored_clients.add(client(client_name="Another"))
    async with store.units.read() as tx:
        found = await tx.stored_clients.get("c-1")
        assert await tx.stored_clients.get("c-2") is None
    assert found is not None
    assert found.metadata == kept.metadata
    assert (found.origin, found.created_at, found.registration_token_hash) == (
        "registration",
        NOW,
        "digest-of-the-registration-token",
    )
    assert found.client().secret_matches(SECRET)
    assert not found.client().secret_matches(SECRET + "x")
    as_client = found.client()
    assert as_client.grant_types == {"authorization_code", "refresh_token", "client_credentials"}
    assert as_client.resources == {"https://api.example.com"}
    assert as_client.allowed_scopes == {"openid", "email"}
    assert as_client.origin == "registration" and not as_client.first_party


async def test_replace_remove_and_all(store: Store) -> None:
    async with store.units.begin() as tx:
        await tx.stored_clients.add(client("b"))
        await tx.stored_clients.add(client("a"))
        assert not await tx.stored_clients.replace(client("z"))
        later = NOW + dt.timedelta(hours=1)
        renamed = attrs.evolve(client("a", client_name="Renamed"), updated_at=later, secrets=())
        assert await tx.stored_clients.replace(renamed)
    async with store.units.begin() as tx:
        listed = await tx.stored_clients.all()
        assert [c.client_id for c in listed] == ["a", "b"]
        assert listed[0].metadata.client_name == "Renamed" and listed[0].secrets == ()
        assert listed[0].updated_at == later
        assert await tx.stored_clients.remove("a")
        assert not await tx.stored_clients.remove("a")
    async with store.units.read() as tx:
        assert [c.client_id for c in await tx.stored_clients.all()] == ["b"]


async def test_a_failed_unit_keeps_no_client(store: Store) -> None:
    with pytest.raises(RuntimeError):
        async with store.units.begin() as tx:
            await tx.stored_clients.add(client())
            raise RuntimeError("the registration failed after the write")
    async with store.units.read() as tx:
        assert await tx.stored_clients.get("c-1") is None


async def test_an_initial_access_token_is_spent_once_and_never_after_expiry(
    store: Store,
) -> None:
    hour = dt.timedelta(hours=1)
    async with store.units.begin() as tx:
        await tx.stored_clients.add_initial_token(InitialAccessToken("t-1", NOW, NOW + hour))
        await tx.stored_clients.add_initial_token(InitialAccessToken("t-2", NOW, NOW + hour))
    async with store.units.begin() as tx:
        assert await tx.stored_clients.spend_initial_token("t-1", NOW)
    async with store.units.begin() as tx:
        assert not await tx.stored_clients.spend_initial_token("t-1", NOW)
        assert not await tx.stored_clients.spend_initial_token("unknown", NOW)
        assert not await tx.stored_clients.spend_initial_token("t-2", NOW + hour)
    # A unit that fails after spending gives the token back.
    async with store.units.begin() as tx:
        await tx.stored_clients.add_initial_token(InitialAccessToken("t-3", NOW, NOW + hour))
    with pytest.raises(RuntimeError):
        async with store.units.begin() as tx:
            assert await tx.stored_clients.spend_initial_token("t-3", NOW)
            raise RuntimeError("the client could not be kept")
    async with store.units.begin() as tx:
        assert await tx.stored_clients.spend_initial_token("t-3", NOW)


async def test_a_removed_clients_families_and_grants_go_with_it(store: Store) -> None:
    account, _ = await store.accounts.create_with_identity(verified("google", "s-1"), NOW)
    later = NOW + dt.timedelta(days=1)
    async with store.units.begin() as tx:
        for family_id, client_id in (("f-1", "gone"), ("f-2", "gone"), ("f-3", "kept")):
            await tx.refresh_tokens.start_family(
                TokenFamily(family_id, client_id, account.id, "session-1", NOW, later)
            )
        for client_id in ("gone", "kept"):
            await tx.grants.put(Grant(account.id, client_id, frozenset({"openid"}), NOW))
    async with store.units.begin() as tx:
        revoked = await tx.refresh_tokens.revoke_all_of_client("gone", NOW)
        assert sorted(revoked) == ["f-1", "f-2"]
        assert await tx.grants.remove_all_of_client("gone") == 1
    async with store.units.read() as tx:
        assert not await tx.refresh_tokens.is_family_live("f-1", NOW)
        assert await tx.refresh_tokens.is_family_live("f-3", NOW)
        assert await tx.grants.get(account.id, "gone") is None
        assert await tx.grants.get(account.id, "kept") is not None
