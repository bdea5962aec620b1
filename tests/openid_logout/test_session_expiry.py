"""A session that ends by expiring ends for the provider's clients too: every client that
received tokens in it and registered a ``backchannel_logout_uri`` gets one logout token
(through the outbox, like every other end of a session) and the session's token families die
with it. A session revoked before it expired is not told twice. On memory, SQLite and
PostgreSQL, the clock moved past the session's expiry while the service runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, SettableClock
from tests.support.stores import service_database_url

from .conftest import STORES, Provider, Receiver, Session, open_provider
from .test_backchannel_logout import settled, told

TTL = 120  # seconds: the session's lifetime (the logout token's iat stays near real time)


@pytest.fixture(params=STORES)
async def op_short(
    request: pytest.FixtureRequest,
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    receiver: Receiver,
    tmp_path: Path,
) -> AsyncIterator[Provider]:
    """The provider with sessions of :data:`TTL` seconds, on each store."""
    url = service_database_url(request, request.param, tmp_path)
    yield await open_provider(
        make_service,
        fake_idp,
        idp_clock,
        receiver,
        url,
        request.param,
        {"session": {"ttl_seconds": TTL}},
    )


async def live(op: Provider, session: Session) -> bool:
    async with op.resources.stores.units.begin() as tx:
        return await tx.sessions.is_live(session.session_id, op.clock.now())


async def a_few_rounds_of_the_worker() -> None:
    """The worker polls every 0.05 s here: give it many rounds to do something it must not."""
    await asyncio.sleep(0.5)


async def test_an_expired_session_tells_its_clients_once_and_ends_its_families(
    op_short: Provider,
) -> None:
    op = op_short
    session = await op.signed_in()
    await op.served(session, "webapp", "admin", "mobile")  # mobile has no back-channel URI
    ended = await op.family(session, "admin")
    op.clock.advance(TTL / 2)
    other = await op.signed_in(intent="login")  # the same account, later: still live after
    await op.served(other, "webapp")
    kept = await op.family(other)
    await a_few_rounds_of_the_worker()
    assert op.receiver.deliveries == []  # nothing has ended yet

    op.clock.advance(TTL / 2 + 1)
    assert not await live(op, session) and await live(op, other)

    await told(op, session, "webapp", "admin")
    assert not await op.family_live(ended)
    assert await op.family_live(kept)
    await settled(op)
    await a_few_rounds_of_the_worker()
    # once: another round (or instance) finds nothing more to tell
    assert sorted(d.client_id for d in op.receiver.deliveries) == ["admin", "webapp"]
    assert op.receiver.for_session(other.session_id) == []
    assert await op.outbox() == []


async def test_a_session_revoked_before_it_expired_is_not_told_again(op_short: Provider) -> None:
    op = op_short
    session = await op.signed_in()
    await op.served(session, "webapp")
    answer = await op.client.post("/v1/auth/logout", headers=session.bearer)
    assert answer.status == 204
    await told(op, session, "webapp")
    await settled(op)

    op.clock.advance(TTL + 1)
    await a_few_rounds_of_the_worker()
    assert len(op.receiver.deliveries) == 1
    assert await op.outbox() == []
