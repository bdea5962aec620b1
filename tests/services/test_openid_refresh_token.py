"""The ``refresh_token`` grant: rotated at every use, a replaced token presented again revokes
its family, bound to its client and its session, narrowing the scope but never widening it;
and the token endpoint's choice of grant by ``grant_type``."""

from __future__ import annotations

import logging

import pytest

from authgate.domain.openid.records import token_digest
from authgate.domain.openid.refusals import (
    InvalidGrant,
    InvalidScope,
    OAuthInvalidRequest,
    UnsupportedGrantType,
)
from authgate.services.openid.grants import GRANTS
from authgate.services.sessions import SessionService
from tests.services.conftest import CLIENT, SignIns
from tests.services.fakes import FixedClock
from tests.services.openid_fakes import FIRST, SPA, OpenIdProvider
from tests.support.stores import MemoryStore

UNUSABLE = "the refresh token is unknown, expired or revoked"


@pytest.fixture
def op(store: MemoryStore, clock: FixedClock, sessions: SessionService) -> OpenIdProvider:
    return OpenIdProvider.build(store, clock, sessions)


async def first_refresh(op: OpenIdProvider, flow: SignIns, scope: str) -> tuple[str, str]:
    """The refresh token of a new sign-in's code (with ``scope``), and its family."""
    _, issued = await op.signed_in_tokens(flow, FIRST, scope)
    assert issued.refresh_token is not None
    return issued.refresh_token, op.signer.access_tokens[issued.access_token]["fam"]


async def refused(op: OpenIdProvider, client_id: str, token: str, detail: str) -> None:
    with pytest.raises(InvalidGrant) as refusal:
        await op.refresh(client_id, token)
    assert refusal.value.error == "invalid_grant"
    assert (refusal.value.description, refusal.value.detail) == (UNUSABLE, detail)


async def test_a_refresh_token_is_rotated_at_every_use(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    first, family = await first_refresh(op, flow, "openid offline_access")
    clock.advance(30)
    issued = await op.refresh(FIRST, first)
    assert issued.refresh_token is not None and issued.refresh_token != first
    old = await op.store.refresh_tokens.get(token_digest(first))
    new = await op.store.refresh_tokens.get(token_digest(issued.refresh_token))
    assert old is not None and old.replaced_at == clock.now()
    assert new is not None and new.current(clock.now()) and new.family_id == family
    assert op.signer.access_tokens[issued.access_token]["fam"] == family
    assert issued.scopes == ("openid", "offline_access")


async def test_a_refreshed_id_token_keeps_the_first_ones_subject_and_auth_time(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session, first = await op.signed_in_tokens(flow, FIRST, "openid offline_access")
    assert first.refresh_token is not None
    clock.advance(600)
    issued = await op.refresh(FIRST, first.refresh_token)
    before = op.signer.id_tokens[first.id_token].claims
    after = op.signer.id_tokens[issued.id_token].claims
    for claim in ("iss", "sub", "aud", "azp", "auth_time", "sid"):
        assert after[claim] == before[claim], claim
    assert after["iat"] == int(clock.now().timestamp()) > before["iat"]
    assert session.auth_time is not None
    assert after["auth_time"] == int(session.auth_time.timestamp())


async def test_a_replaced_token_presented_again_revokes_its_family(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    first, family = await first_refresh(op, flow, "openid offline_access")
    latest = (await op.refresh(FIRST, first)).refresh_token
    assert latest is not None
    with caplog.at_level(logging.WARNING, "authgate.security"), pytest.raises(InvalidGrant) as e:
        await op.refresh(FIRST, first)
    assert (e.value.description, e.value.detail) == (
        "the refresh token was used already",
        "refresh reused",
    )
    assert f"refresh token of client {FIRST} was presented again" in caplog.text
    assert not await op.store.refresh_tokens.is_family_live(family, clock.now())
    # The family's latest token dies with it.
    await refused(op, FIRST, latest, "refresh token expired or revoked")


async def test_the_scope_may_narrow_and_the_new_token_keeps_the_grants(
    op: OpenIdProvider, flow: SignIns
) -> None:
    first, _ = await first_refresh(op, flow, "openid email offline_access")
    issued = await op.refresh(FIRST, first, scope="openid email openid")
    assert issued.scopes == ("openid", "email")
    assert op.signer.access_tokens[issued.access_token]["scope"] == "openid email"
    assert issued.refresh_token is not None
    kept = await op.store.refresh_tokens.get(token_digest(issued.refresh_token))
    assert kept is not None and kept.scopes == ("openid", "email", "offline_access")


async def test_the_scope_never_widens_and_the_token_stays_current(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    first, _ = await first_refresh(op, flow, "openid offline_access")
    with pytest.raises(InvalidScope) as refusal:
        await op.refresh(FIRST, first, scope="openid email")
    assert (refusal.value.error, refusal.value.description) == (
        "invalid_scope",
        "the scope may only narrow what was granted",
    )
    still = await op.store.refresh_tokens.get(token_digest(first))
    assert still is not None and still.current(clock.now())


async def test_another_clients_token_is_refused_and_left_alone(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    first, family = await first_refresh(op, flow, "openid offline_access")
    await refused(op, SPA, first, f"refresh token of client {FIRST} presented by another")
    still = await op.store.refresh_tokens.get(token_digest(first))
    assert still is not None and still.current(clock.now())
    assert await op.store.refresh_tokens.is_family_live(family, clock.now())


async def test_an_unknown_token_is_refused(op: OpenIdProvider) -> None:
    await refused(op, FIRST, "no-such-refresh-token", "refresh token unknown")


async def test_a_token_dies_with_its_session(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session, issued = await op.signed_in_tokens(flow, FIRST, "openid offline_access")
    assert issued.refresh_token is not None
    await op.sessions.revoke(
        session.account_id, session.session_id, client=CLIENT, provider="google"
    )
    await refused(op, FIRST, issued.refresh_token, "refresh token's session ended")


async def test_a_token_whose_session_expired_unnoticed_is_refused(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    _, issued = await op.signed_in_tokens(flow, FIRST, "openid offline_access")
    assert issued.refresh_token is not None
    clock.advance(hours=1, seconds=1)  # the session's idle lifetime, nothing revoked yet
    await refused(op, FIRST, issued.refresh_token, "refresh token's session ended")


async def test_a_token_of_a_revoked_family_is_refused(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    first, family = await first_refresh(op, flow, "openid offline_access")
    assert await op.store.refresh_tokens.revoke_family(family, clock.now())
    await refused(op, FIRST, first, "refresh token expired or revoked")


async def test_without_offline_access_no_refresh_token_is_issued(
    op: OpenIdProvider, flow: SignIns
) -> None:
    session, issued = await op.signed_in_tokens(flow, FIRST, "openid email")
    assert issued.refresh_token is None
    [family] = await op.store.refresh_tokens.for_account(session.account_id)
    assert family.client_id == FIRST  # a family all the same: its access tokens name it


async def test_a_refresh_without_its_token_is_an_invalid_request(op: OpenIdProvider) -> None:
    with pytest.raises(OAuthInvalidRequest) as refusal:
        await op.tokens.grant(op.client(FIRST), {"grant_type": "refresh_token"})
    assert refusal.value.description == "refresh_token is missing"


# -- the choice of grant ------------------------------------------------------------------------


def test_the_grants_served() -> None:
    assert list(GRANTS) == [
        "authorization_code",
        "refresh_token",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:device_code",
    ]


async def test_a_request_without_a_grant_type_is_an_invalid_request(
    op: OpenIdProvider,
) -> None:
    for form in ({}, {"grant_type": ""}):
        with pytest.raises(OAuthInvalidRequest) as refusal:
            await op.tokens.grant(op.client(FIRST), form)
        assert (refusal.value.error, refusal.value.description) == (
            "invalid_request",
            "grant_type is missing",
        )


async def test_an_unsupported_grant_type_is_refused_as_before(op: OpenIdProvider) -> None:
    with pytest.raises(UnsupportedGrantType) as refusal:
        await op.tokens.grant(op.client(FIRST), {"grant_type": "client_credentials" + "x" * 50})
    assert refusal.value.error == "unsupported_grant_type"
    assert refusal.value.description == (
        "grant_type must be authorization_code, refresh_token, client_credentials or "
        "urn:ietf:params:oauth:grant-type:device_code"
    )
    assert refusal.value.detail == "unsupported grant_type " + repr(
        ("client_credentials" + "x" * 50)[:40]
    )
