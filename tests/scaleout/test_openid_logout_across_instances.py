"""Back-channel logout on two ``authgate serve`` instances on one PostgreSQL database and one
Redis: sessions whose applications got tokens at either instance end at one of them, and each
application's loopback endpoint receives exactly one logout token per session, whichever
instance's outbox worker claims it (both poll the shared outbox)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.openid_bench import CLIENTS, SECRET, Browser
from tests.support.jwt import claims_of
from tests.support.postgres import PostgresServer
from tests.support.waiting import eventually

from .openid_pair import openid_pair

SESSIONS = 6
APPLICATIONS = ("web", "admin")
ADMIN_REDIRECT = "https://admin.example.com/cb"


class Receiver:
    """The applications' back-channel logout endpoints (``/bc/{client_id}``) on loopback:
    every logout token's ``sid``, by application (answers 200 after a short delay, so that
    both instances' workers find rows to claim)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str]] = []
        self.server: TestServer | None = None

    async def handle(self, request: web.Request) -> web.Response:
        form = await request.post()
        claims = claims_of(str(form["logout_token"]))
        await asyncio.sleep(0.02)
        self.received.append((str(claims["sid"]), request.match_info["client_id"]))
        return web.Response()

    def uri(self, client_id: str) -> str:
        assert self.server is not None
        return str(self.server.make_url(f"/bc/{client_id}"))


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/bc/{client_id}", found.handle)
    found.server = TestServer(app, host="127.0.0.1")
    await found.server.start_server()
    try:
        yield found
    finally:
        await found.server.close()


def session_id_of(token: str) -> str:
    return str(claims_of(token)["sid"])


async def test_a_logout_at_one_instance_sends_one_token_per_application_and_session(
    tmp_path: Path, postgres_server: PostgresServer, redis_url: str, receiver: Receiver
) -> None:
    clients = {
        "web": {**CLIENTS["web"], "backchannel_logout_uri": receiver.uri("web")},
        "admin": {
            **CLIENTS["web"],
            "name": "Admin",
            "redirect_uris": [ADMIN_REDIRECT],
            "backchannel_logout_uri": receiver.uri("admin"),
        },
    }
    logout_tokens = {"poll_seconds": 0.05, "lease_seconds": 5, "timeout_seconds": 2}
    async with openid_pair(
        tmp_path, postgres_server, redis_url, clients, logout_tokens=logout_tokens
    ) as pair:
        http = pair.http
        sessions = [await pair.session() for _ in range(SESSIONS)]
        for session in sessions:  # each application served by another instance
            await Browser(http, pair.a, session).flow()
            await Browser(
                http, pair.b, session, client="admin", secret=SECRET, redirect_uri=ADMIN_REDIRECT
            ).flow()

        async with http.post(
            f"{pair.a}/v1/auth/logout",
            params={"everywhere": "true"},
            headers={"Authorization": f"Bearer {sessions[-1]}"},
        ) as ended:
            assert ended.status == 204, await ended.text()

        expected = {(session_id_of(s), c) for s in sessions for c in APPLICATIONS}
        await eventually(
            lambda: len(receiver.received) >= len(expected),
            what="every logout token delivered",
        )
        await asyncio.sleep(0.5)  # many polls of both workers: nothing more arrives
        sent = Counter(receiver.received)
        assert set(sent) == expected
        assert max(sent.values()) == 1, [k for k, n in sent.items() if n > 1]
