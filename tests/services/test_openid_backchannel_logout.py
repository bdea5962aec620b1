"""Back-channel logout: what ends with a session (its token families, a logout token owed to
each client of it that listens), by revocation or by expiry, and the worker that delivers the
tokens (delivered, retried with backoff, given up), each delivery and give-up audited."""

from __future__ import annotations

import datetime as dt
import logging

import pytest

from authgate.domain.model import Outcome, SignInEvent
from authgate.domain.openid.clients import Client, ClientRegistry
from authgate.domain.openid.logout import BACKCHANNEL_LOGOUT_EVENT, PendingLogout
from authgate.ports.session_tokens import SessionClaims
from authgate.services.openid.backchannel_logout import owe_logouts
from authgate.services.openid.client_directory import ClientDirectory
from authgate.services.sessions import SessionService
from tests.services.conftest import CLIENT, SignIns
from tests.services.fakes import FixedClock
from tests.services.openid_fakes import (
    FIRST,
    ISSUER,
    SPA,
    WEB,
    WEB_LOGOUT_URI,
    OpenIdProvider,
    clients,
)
from tests.support.stores import MemoryStore


@pytest.fixture
def op(store: MemoryStore, clock: FixedClock, sessions: SessionService) -> OpenIdProvider:
    return OpenIdProvider.build(store, clock, sessions)


async def served(op: OpenIdProvider, flow: SignIns, *client_ids: str) -> SessionClaims:
    """A session in which each of ``client_ids`` received tokens."""
    session = await op.session(flow)
    for client_id in client_ids:
        await op.redeem(client_id, await op.code(session, client_id))
    return session


async def end(op: OpenIdProvider, session: SessionClaims) -> None:
    assert await op.sessions.revoke(
        session.account_id, session.session_id, client=CLIENT, provider="google"
    )


async def pending(op: OpenIdProvider) -> list[PendingLogout]:
    return await op.store.logout_outbox.pending()


async def logout_events(op: OpenIdProvider, account_id: str) -> list[SignInEvent]:
    events = await op.store.events.for_account(account_id)
    return [e for e in events if e.provider == WEB]


async def test_a_session_ends_with_its_families_and_owes_each_listening_client(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await served(op, flow, WEB, FIRST, SPA)
    families = await op.store.refresh_tokens.for_account(session.account_id)
    assert len(families) == 3
    await end(op, session)
    for family in families:
        assert not await op.store.refresh_tokens.is_family_live(family.family_id, clock.now())
    [owed] = await pending(op)  # WEB only: the others registered no backchannel_logout_uri
    assert (owed.client_id, owed.account_id, owed.session_id) == (
        WEB,
        session.account_id,
        session.session_id,
    )
    assert (owed.created_at, owed.next_attempt_at, owed.attempts) == (clock.now(), clock.now(), 0)


async def test_without_a_listening_client_nothing_is_owed(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await served(op, flow, FIRST)
    await end(op, session)
    assert await pending(op) == []
    [family] = await op.store.refresh_tokens.for_account(session.account_id)
    assert not family.live(clock.now())


async def test_the_worker_delivers_a_signed_logout_token_audited(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await served(op, flow, WEB)
    await end(op, session)
    assert await op.worker.run_once() == 1
    [(uri, token)] = op.sender.sent
    assert uri == WEB_LOGOUT_URI
    claims = op.signer.logout_tokens[token]
    assert (claims["iss"], claims["aud"], claims["sid"], claims["sub"]) == (
        ISSUER,
        WEB,
        session.session_id,
        session.account_id,
    )
    assert claims["events"] == {BACKCHANNEL_LOGOUT_EVENT: {}} and "nonce" not in claims
    assert await pending(op) == []
    [event] = await logout_events(op, session.account_id)
    assert event.outcome is Outcome.BACKCHANNEL_LOGOUT_SENT
    assert event.detail == f"session {session.session_id}: after 1 attempt(s)"


async def test_a_failed_delivery_is_retried_later_with_a_new_token(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    session = await served(op, flow, WEB)
    await end(op, session)
    op.sender.down[WEB_LOGOUT_URI] = "HTTP 503"
    with caplog.at_level(logging.WARNING, "authgate.openid_logout"):
        await op.worker.run_once()
    assert "failed (attempt 1, next at" in caplog.text and "HTTP 503" in caplog.text
    [row] = await pending(op)
    assert row.attempts == 1
    assert clock.now() + dt.timedelta(seconds=4) <= row.next_attempt_at
    assert row.next_attempt_at <= clock.now() + dt.timedelta(seconds=5)
    assert await logout_events(op, session.account_id) == []
    assert await op.worker.run_once() == 0  # not due yet
    del op.sender.down[WEB_LOGOUT_URI]
    clock.advance(5)
    assert await op.worker.run_once() == 1
    assert len(op.sender.sent) == 1 and len(op.signer.logout_tokens) == 2  # a new jti each
    [event] = await logout_events(op, session.account_id)
    assert event.outcome is Outcome.BACKCHANNEL_LOGOUT_SENT
    assert event.detail == f"session {session.session_id}: after 2 attempt(s)"


async def test_a_delivery_failing_past_the_maximum_age_is_given_up_audited(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await served(op, flow, WEB)
    await end(op, session)
    op.sender.down[WEB_LOGOUT_URI] = "connection refused"
    clock.advance(hours=24)
    await op.worker.run_once()
    assert await pending(op) == []
    [event] = await logout_events(op, session.account_id)
    assert event.outcome is Outcome.BACKCHANNEL_LOGOUT_FAILED
    assert event.detail == (
        f"session {session.session_id}: given up after 1 attempt(s): connection refused"
    )


async def test_a_client_no_longer_listening_is_given_up_at_once(
    store: MemoryStore, clock: FixedClock, sessions: SessionService, flow: SignIns
) -> None:
    op = OpenIdProvider.build(store, clock, sessions)
    session = await served(op, flow, WEB)
    await end(op, session)
    # The configuration changed since: the client registered without a backchannel_logout_uri.
    quiet = [
        Client(c.client_id, c.name, c.client_type, c.token_endpoint_auth_method, c.redirect_uris)
        if c.client_id == WEB
        else c
        for c in clients()
    ]
    later = OpenIdProvider.build(store, clock, sessions, ClientRegistry(quiet))
    await later.worker.run_once()
    assert later.sender.sent == [] and await pending(later) == []
    [event] = await logout_events(later, session.account_id)
    assert event.outcome is Outcome.BACKCHANNEL_LOGOUT_FAILED
    assert event.detail == (
        f"session {session.session_id}: the client is no longer registered with a "
        "backchannel_logout_uri"
    )


async def test_a_session_that_expired_is_ended_by_the_worker_once(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await served(op, flow, WEB, FIRST)
    clock.advance(hours=1, seconds=1)  # idle past its lifetime: nothing revoked it
    assert await op.worker.end_expired() == 2
    for family in await op.store.refresh_tokens.for_account(session.account_id):
        assert not family.live(clock.now())
    [owed] = await pending(op)
    assert (owed.client_id, owed.session_id) == (WEB, session.session_id)
    assert await op.worker.end_expired() == 0  # its clients' rows were taken


async def test_owe_logouts_skips_unknown_and_silent_clients(
    op: OpenIdProvider, clock: FixedClock
) -> None:
    async with op.store.units.begin() as tx:
        queued = await owe_logouts(
            tx,
            ClientDirectory(op.clients),
            "account-1",
            "session-1",
            [WEB, FIRST, "gone"],
            clock.now(),
        )
    assert queued == 1
    assert [p.client_id for p in await pending(op)] == [WEB]
