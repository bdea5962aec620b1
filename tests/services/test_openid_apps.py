"""The person's applications: listed with their grants or their working token families, and
consent withdrawn (the grant, the outstanding codes and the families at once, audited)."""

from __future__ import annotations

import datetime as dt

import pytest

from authgate.domain import errors
from authgate.domain.model import Caller, Outcome
from authgate.domain.openid.clients import ClientRegistry
from authgate.domain.openid.refusals import InvalidGrant
from authgate.ports.session_tokens import SessionClaims
from authgate.services.openid.apps import AccountApp, AccountApps
from authgate.services.openid.client_directory import ClientDirectory
from authgate.services.sessions import SessionService
from tests.services.conftest import CLIENT, SignIns
from tests.services.fakes import START, FixedClock
from tests.services.openid_fakes import FIRST, WEB, OpenIdProvider, clients
from tests.support.stores import MemoryStore


@pytest.fixture
def op(store: MemoryStore, clock: FixedClock, sessions: SessionService) -> OpenIdProvider:
    return OpenIdProvider.build(store, clock, sessions)


def caller(session: SessionClaims) -> Caller:
    return Caller(
        account_id=session.account_id,
        session_id=session.session_id,
        provider=session.provider or "",
        auth_time=session.auth_time,
        client=CLIENT,
    )


async def test_the_list_shows_grants_and_applications_holding_working_tokens(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await op.session(flow)
    await op.redeem(WEB, await op.code(session, WEB, "openid email"))
    clock.advance(60)
    await op.redeem(FIRST, await op.code(session, FIRST, "openid"))
    assert await op.apps.for_account(session.account_id) == [
        AccountApp(
            client_id=FIRST,
            name="First Party",
            scopes=(),
            granted_at=START + dt.timedelta(seconds=60),
            last_used_at=None,
            granted=False,
            live_token_families=1,
        ),
        AccountApp(
            client_id=WEB,
            name="Web App",
            scopes=("email", "openid"),
            granted_at=START,
            last_used_at=START,
            granted=True,
            live_token_families=1,
        ),
    ]


async def test_families_that_no_longer_work_are_not_counted(
    op: OpenIdProvider, flow: SignIns
) -> None:
    session = await op.session(flow)
    await op.redeem(WEB, await op.code(session, WEB))
    await op.redeem(FIRST, await op.code(session, FIRST))
    await op.sessions.revoke(
        session.account_id, session.session_id, client=CLIENT, provider="google"
    )
    [web] = await op.apps.for_account(session.account_id)
    assert (web.client_id, web.granted, web.live_token_families) == (WEB, True, 0)


async def test_a_family_whose_session_expired_unnoticed_does_not_work(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await op.session(flow)
    await op.redeem(FIRST, await op.code(session, FIRST, "openid offline_access"))
    clock.advance(hours=1, seconds=1)  # the session expired; its family is not revoked yet
    [family] = await op.store.refresh_tokens.for_account(session.account_id)
    assert family.live(clock.now())
    assert await op.apps.for_account(session.account_id) == []


async def test_a_client_no_longer_registered_is_listed_without_a_name(
    op: OpenIdProvider, flow: SignIns, store: MemoryStore
) -> None:
    session = await op.session(flow)
    await op.code(session, WEB)
    registry = ClientRegistry([c for c in clients() if c.client_id != WEB])
    apps = AccountApps(clients=ClientDirectory(registry), units=store.units, sessions=op.sessions)
    [web] = await apps.for_account(session.account_id)
    assert (web.client_id, web.name, web.granted) == (WEB, None, True)


async def test_withdrawing_removes_the_grant_spends_codes_revokes_families_audited(
    op: OpenIdProvider, flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    session = await op.session(flow)
    issued = await op.redeem(WEB, await op.code(session, WEB, "openid offline_access"))
    unused = await op.code(session, WEB)
    family = op.signer.access_tokens[issued.access_token]["fam"]
    revoked = await op.apps.withdraw(caller(session), WEB)
    assert revoked == [family]
    assert await store.grants.get(session.account_id, WEB) is None
    assert not await store.refresh_tokens.is_family_live(family, clock.now())
    with pytest.raises(InvalidGrant, match="unknown or expired"):
        await op.redeem(WEB, unused)
    event = (await store.events.for_account(session.account_id))[0]
    assert (event.outcome, event.provider, event.client_address) == (
        Outcome.APP_WITHDRAWN,
        "google",
        CLIENT.address,
    )
    assert event.detail == f"client {WEB}: 1 token families revoked, 1 unused codes spent"
    assert await op.apps.for_account(session.account_id) == []


async def test_withdrawing_an_application_the_account_does_not_have_is_not_found(
    op: OpenIdProvider, flow: SignIns, store: MemoryStore
) -> None:
    session = await op.session(flow)
    with pytest.raises(errors.AppNotFound) as missing:
        await op.apps.withdraw(caller(session), WEB)
    assert missing.value.client_id == WEB
    assert [e.outcome for e in await store.events.for_account(session.account_id)] == [
        Outcome.REGISTERED
    ]


async def test_withdrawing_needs_a_recent_sign_in(
    op: OpenIdProvider, flow: SignIns, store: MemoryStore, clock: FixedClock
) -> None:
    session = await op.session(flow)
    await op.code(session, WEB)
    clock.advance(minutes=11)
    with pytest.raises(errors.ReauthenticationRequired) as stale:
        await op.apps.withdraw(caller(session), WEB)
    assert stale.value.max_age == 600
    assert await store.grants.get(session.account_id, WEB) is not None
