"""Two instances of the service on one PostgreSQL: a logout at one sends one logout token per
client and session, whichever instance's worker claims it; none is sent twice."""

from __future__ import annotations

import asyncio
from collections import Counter

from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, SettableClock
from tests.support.waiting import eventually

from .conftest import Provider, Receiver, open_provider

SESSIONS = 12


async def test_two_instances_deliver_each_logout_token_once(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    receiver: Receiver,
    clean_postgres_url: str,
) -> None:
    one = await open_provider(
        make_service, fake_idp, idp_clock, receiver, clean_postgres_url, "postgres"
    )
    two = await open_provider(
        make_service, fake_idp, idp_clock, receiver, clean_postgres_url, "postgres"
    )
    receiver.delay = 0.02  # slow enough that both workers find rows to claim
    sessions = [
        await one.signed_in("ada-1", intent="register" if i == 0 else "login")
        for i in range(SESSIONS)
    ]
    for session in sessions:
        await one.served(session, "webapp", "admin")

    # Everywhere, at the first instance: 2 tokens for each session, 24 in all.
    latest = sessions[-1]
    answer = await one.client.post(
        "/v1/auth/logout", params={"everywhere": "true"}, headers=latest.bearer
    )
    assert answer.status == 204

    expected = {(s.session_id, c) for s in sessions for c in ("webapp", "admin")}
    await eventually(
        lambda: len(receiver.deliveries) >= len(expected), what="every logout token delivered"
    )

    async def outbox_empty(instance: Provider) -> bool:
        return await instance.outbox() == []

    await eventually(lambda: outbox_empty(two), what="the shared outbox emptied")
    await asyncio.sleep(0.3)  # several polls of both workers: nothing more arrives
    sent = Counter((d.claims["sid"], d.client_id) for d in receiver.deliveries)
    assert set(sent) == expected
    assert max(sent.values()) == 1, [k for k, n in sent.items() if n > 1]
    assert all(d.problems == [] for d in receiver.deliveries)
    assert receiver.answered == [200] * len(expected)


async def test_two_instances_tell_an_expired_sessions_clients_once(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    receiver: Receiver,
    clean_postgres_url: str,
) -> None:
    """Sessions that expire are noticed by both instances' workers: each client of each
    session is told once, whichever worker took the session."""
    short = {"session": {"ttl_seconds": 120}}
    one = await open_provider(
        make_service, fake_idp, idp_clock, receiver, clean_postgres_url, "postgres", short
    )
    two = await open_provider(
        make_service, fake_idp, idp_clock, receiver, clean_postgres_url, "postgres", short
    )
    sessions = [
        await one.signed_in("ada-1", intent="register" if i == 0 else "login")
        for i in range(SESSIONS)
    ]
    for session in sessions:
        await two.served(session, "webapp", "admin")

    idp_clock.advance(121)  # every session expired, for both instances

    expected = {(s.session_id, c) for s in sessions for c in ("webapp", "admin")}
    await eventually(
        lambda: len(receiver.deliveries) >= len(expected), what="every logout token delivered"
    )

    async def outbox_empty() -> bool:
        return await one.outbox() == []

    await eventually(outbox_empty, what="the shared outbox emptied")
    await asyncio.sleep(0.3)  # several polls of both workers: nothing more arrives
    sent = Counter((d.claims["sid"], d.client_id) for d in receiver.deliveries)
    assert set(sent) == expected
    assert max(sent.values()) == 1, [k for k, n in sent.items() if n > 1]
    assert all(d.problems == [] for d in receiver.deliveries)
