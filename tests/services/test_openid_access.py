"""Whether a token of the provider is active (userinfo, introspection, revocation): its
signature and expiry, its client still registered, its session, family and account standing;
what introspection says of each kind; and revocation by the client it was issued to."""

from __future__ import annotations

import pytest

from authgate.domain.openid.clients import ClientRegistry
from authgate.domain.openid.records import token_digest
from authgate.services.openid.access import (
    ACCESS_TOKEN,
    REFRESH_TOKEN,
    SESSION_TOKEN,
    TokenAccess,
    TokenInactive,
)
from authgate.services.openid.client_directory import ClientDirectory
from authgate.services.openid.issuing import IssuedTokens
from authgate.services.sessions import SessionService
from tests.services.conftest import CLIENT, SignIns
from tests.services.fakes import FixedClock
from tests.services.openid_fakes import FIRST, ISSUER, SPA, OpenIdProvider, clients
from tests.support.stores import MemoryStore


@pytest.fixture
def op(store: MemoryStore, clock: FixedClock, sessions: SessionService) -> OpenIdProvider:
    return OpenIdProvider.build(store, clock, sessions)


async def tokens(op: OpenIdProvider, flow: SignIns) -> tuple[str, str, IssuedTokens]:
    """A signed-in person's account and session, and the first-party client's tokens."""
    session, issued = await op.signed_in_tokens(flow, FIRST, "openid email offline_access")
    return session.account_id, session.session_id, issued


async def assert_inactive(op: OpenIdProvider, access_token: str, why: str) -> None:
    with pytest.raises(TokenInactive) as inactive:
        await op.access.access_token(access_token)
    assert str(inactive.value) == why
    assert await op.access.describe(access_token) is None


def family(op: OpenIdProvider, issued: IssuedTokens) -> str:
    found: str = op.signer.access_tokens[issued.access_token]["fam"]
    return found


async def test_an_access_token_is_active_with_its_account(
    op: OpenIdProvider, flow: SignIns
) -> None:
    account_id, session_id, issued = await tokens(op, flow)
    active = await op.access.access_token(issued.access_token)
    assert active.account.id == account_id
    assert (active.claims.client_id, active.claims.session_id) == (FIRST, session_id)
    assert active.claims.scopes == ("openid", "email", "offline_access")


async def test_an_expired_or_foreign_access_token_is_inactive(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    _, _, issued = await tokens(op, flow)
    await assert_inactive(op, "at.999.forged", "not an access token of this provider, or expired")
    clock.advance(minutes=10)
    await assert_inactive(
        op, issued.access_token, "not an access token of this provider, or expired"
    )


async def test_an_access_token_of_a_client_no_longer_registered_is_inactive(
    op: OpenIdProvider, flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    _, _, issued = await tokens(op, flow)
    without_first = [c for c in clients() if c.client_id != FIRST]
    access = TokenAccess(
        signer=op.signer,
        clients=ClientDirectory(ClientRegistry(without_first)),
        sessions=op.sessions,
        units=store.units,
        clock=clock,
    )
    with pytest.raises(TokenInactive, match="no longer registered"):
        await access.access_token(issued.access_token)


async def test_an_access_token_dies_with_its_session(op: OpenIdProvider, flow: SignIns) -> None:
    account_id, session_id, issued = await tokens(op, flow)
    await op.sessions.revoke(account_id, session_id, client=CLIENT, provider="google")
    await assert_inactive(op, issued.access_token, "its session has ended")


async def test_an_access_token_dies_with_its_family(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    _, _, issued = await tokens(op, flow)
    assert await op.store.refresh_tokens.revoke_family(family(op, issued), clock.now())
    await assert_inactive(op, issued.access_token, "its token family was revoked or has expired")


async def test_an_access_token_dies_with_its_account(
    op: OpenIdProvider, flow: SignIns, store: MemoryStore
) -> None:
    account_id, _, issued = await tokens(op, flow)
    assert await store.accounts.delete(account_id)
    # Its token families go with the account (a foreign key in SQL), found first.
    await assert_inactive(op, issued.access_token, "its token family was revoked or has expired")
    assert await store.refresh_tokens.for_account(account_id) == []


async def test_a_refresh_token_is_active_while_current(op: OpenIdProvider, flow: SignIns) -> None:
    account_id, _, issued = await tokens(op, flow)
    assert issued.refresh_token is not None
    found = await op.access.refresh_token(issued.refresh_token)
    assert (found.account_id, found.token_hash) == (account_id, token_digest(issued.refresh_token))
    await op.refresh(FIRST, issued.refresh_token)
    with pytest.raises(TokenInactive, match="rotated, revoked or expired"):
        await op.access.refresh_token(issued.refresh_token)
    with pytest.raises(TokenInactive, match="not a refresh token of this provider"):
        await op.access.refresh_token("x" * (16 * 1024 + 1))


async def test_introspection_describes_each_kind_of_active_token(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    account_id, session_id, issued = await tokens(op, flow)
    access = await op.access.describe(issued.access_token)
    assert access is not None
    assert (access.token_type, access.subject, access.client_id, access.audience) == (
        ACCESS_TOKEN,
        account_id,
        FIRST,
        (FIRST,),
    )
    assert (access.issuer, access.session_id, access.issued_at) == (ISSUER, session_id, clock.now())
    assert access.token_id == op.signer.access_tokens[issued.access_token]["jti"]
    assert issued.refresh_token is not None
    refresh = await op.access.describe(issued.refresh_token)
    assert refresh is not None
    assert (refresh.token_type, refresh.subject, refresh.token_id) == (
        REFRESH_TOKEN,
        account_id,
        None,
    )
    assert refresh.scopes == ("openid", "email", "offline_access")


async def test_introspection_describes_a_live_session_token(
    op: OpenIdProvider, flow: SignIns
) -> None:
    signed = await flow.register("bob")
    described = await op.access.describe(signed.session.token)
    assert described is not None
    assert (described.token_type, described.subject, described.client_id) == (
        SESSION_TOKEN,
        signed.account.id,
        None,
    )
    assert described.session_id == signed.session.session_id
    await op.sessions.revoke(
        signed.account.id, signed.session.session_id, client=CLIENT, provider="google"
    )
    assert await op.access.describe(signed.session.token) is None


async def test_revocation_by_the_client_ends_the_whole_family(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    _, _, issued = await tokens(op, flow)
    assert issued.refresh_token is not None
    assert await op.access.revoke(op.client(FIRST), issued.refresh_token) is True
    assert not await op.store.refresh_tokens.is_family_live(family(op, issued), clock.now())
    await assert_inactive(op, issued.access_token, "its token family was revoked or has expired")
    assert await op.access.revoke(op.client(FIRST), issued.access_token) is False


async def test_revocation_by_another_client_or_of_an_unknown_token_changes_nothing(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    _, _, issued = await tokens(op, flow)
    assert issued.refresh_token is not None
    assert await op.access.revoke(op.client(SPA), issued.refresh_token) is False
    assert await op.access.revoke(op.client(SPA), issued.access_token) is False
    assert await op.access.revoke(op.client(FIRST), "unknown") is False
    assert await op.store.refresh_tokens.is_family_live(family(op, issued), clock.now())
