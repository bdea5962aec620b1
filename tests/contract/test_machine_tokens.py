"""What migration 0012 keeps, as a contract run against every adapter (fixture ``store``): the
resource indicators (RFC 8707) of a code and of a token family, read with the family's refresh
tokens through their rotations, and the revoked access tokens of clients' own (by ``jti``,
kept until they expire)."""

from __future__ import annotations

import pytest

from authgate.ports.openid import Redeemed, Rotated
from tests.support.oauth_records import code, family, new_account, refresh
from tests.support.records import T0, at
from tests.support.stores import Store

MCP = "https://mcp.example.com/"
SSF = "https://ssf.example.com/events"


class Boom(Exception):
    pass


async def test_a_codes_resources_round_trip(store: Store) -> None:
    account = await new_account(store)
    issued = code(account, resources=(SSF, MCP))
    await store.authorization_codes.add(issued)
    redeemed = await store.authorization_codes.redeem("code-1", T0)
    assert isinstance(redeemed, Redeemed)
    assert redeemed.code == issued and redeemed.code.resources == (SSF, MCP)


async def test_a_familys_resources_are_read_with_its_tokens_through_rotations(
    store: Store,
) -> None:
    account = await new_account(store)
    await store.refresh_tokens.start_family(
        family(account, resources=(MCP, SSF)), refresh(account, "rt-1")
    )
    [kept] = await store.refresh_tokens.for_account(account)
    assert kept.resources == (MCP, SSF)
    first = await store.refresh_tokens.get("rt-1")
    assert first is not None and first.resources == (MCP, SSF)
    rotated = await store.refresh_tokens.rotate("rt-1", refresh(account, "rt-2"), at(10))
    assert isinstance(rotated, Rotated)
    assert rotated.previous.resources == (MCP, SSF)
    second = await store.refresh_tokens.get("rt-2")
    assert second is not None and second.resources == (MCP, SSF)


async def test_a_family_without_resources_reads_none(store: Store) -> None:
    account = await new_account(store)
    await store.refresh_tokens.start_family(family(account), refresh(account, "rt-1"))
    found = await store.refresh_tokens.get("rt-1")
    assert found is not None and found.resources == ()


async def test_a_clients_token_is_revoked_once_until_it_expires(store: Store) -> None:
    tokens = store.refresh_tokens
    assert not await tokens.is_token_revoked("jti-1")
    assert await tokens.revoke_token("jti-1", "robot", at(300), T0)
    assert await tokens.is_token_revoked("jti-1")
    assert not await tokens.revoke_token("jti-1", "robot", at(300), at(1))  # revoked before
    assert await tokens.is_token_revoked("jti-1")
    # an expired token needs no record: it is inactive anyway
    assert not await tokens.revoke_token("jti-2", "robot", at(300), at(300))
    assert not await tokens.is_token_revoked("jti-2")


async def test_the_purge_drops_revocations_once_their_tokens_expired(store: Store) -> None:
    tokens = store.refresh_tokens
    await tokens.revoke_token("jti-1", "robot", at(300), T0)
    await tokens.revoke_token("jti-2", "robot", at(600), T0)
    assert await tokens.purge_expired(at(299)) == 0
    assert await tokens.purge_expired(at(300)) == 1
    assert not await tokens.is_token_revoked("jti-1")
    assert await tokens.is_token_revoked("jti-2")


async def test_a_revocation_in_a_failed_unit_is_undone(store: Store) -> None:
    with pytest.raises(Boom):
        async with store.units.begin() as tx:
            assert await tx.refresh_tokens.revoke_token("jti-1", "robot", at(300), T0)
            raise Boom
    async with store.units.read() as tx:
        assert not await tx.refresh_tokens.is_token_revoked("jti-1")
