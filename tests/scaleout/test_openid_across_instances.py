"""The OpenID Provider on two ``authgate serve`` instances behind one address: one PostgreSQL
database, one Redis, one key file (the session key and the provider's RSA key).

* a code issued by one instance is redeemed at the other, once: a second redemption, at
  either, is refused;
* a refresh token presented concurrently at both instances rotates exactly once: one request
  gets new tokens, the others are refused as a reuse, and the whole family is then revoked
  (the winner's new refresh token is refused too, at both).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.openid_bench import CLIENTS, REDIRECT, Browser
from tests.support.postgres import PostgresServer

from .openid_pair import openid_pair

# Concurrent presentations of one refresh token at each instance.
PER_INSTANCE = 4


@pytest.fixture
async def browsers(
    tmp_path: Path, postgres_server: PostgresServer, redis_url: str
) -> AsyncIterator[tuple[Browser, Browser]]:
    """A browser signed in (one live session), speaking to instance a and to instance b."""
    async with openid_pair(tmp_path, postgres_server, redis_url, CLIENTS) as pair:
        session = await pair.session()
        yield Browser(pair.http, pair.a, session), Browser(pair.http, pair.b, session)


async def token_status(browser: Browser, form: dict[str, str]) -> tuple[int, dict[str, object]]:
    async with browser.http.post(
        f"{browser.base}/oauth2/token", data=form, headers={"Authorization": browser.token_auth}
    ) as response:
        return response.status, await response.json(content_type=None)


async def test_a_code_issued_at_one_instance_is_redeemed_at_the_other_once(
    browsers: tuple[Browser, Browser],
) -> None:
    a, b = browsers
    code, verifier = await a.code()
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
    }
    status, body = await token_status(b, form)
    assert status == 200, body
    assert body["token_type"] == "Bearer" and body["id_token"] and body["access_token"]
    for instance in (a, b):
        again, refused = await token_status(instance, form)
        assert (again, refused["error"]) == (400, "invalid_grant")


async def test_concurrent_refreshes_at_both_instances_have_one_winner_then_none(
    browsers: tuple[Browser, Browser],
) -> None:
    a, b = browsers
    first = await a.flow("openid offline_access")
    token = str(first["refresh_token"])
    form = {"grant_type": "refresh_token", "refresh_token": token}
    answers = await asyncio.gather(
        *(token_status(instance, form) for _ in range(PER_INSTANCE) for instance in (a, b))
    )
    winners = [body for status, body in answers if status == 200]
    assert len(winners) == 1, answers
    losers = [(status, body.get("error")) for status, body in answers if status != 200]
    assert losers == [(400, "invalid_grant")] * (2 * PER_INSTANCE - 1)
    # The reuse revoked the family: the winner's new refresh token is refused at both.
    renewed = {"grant_type": "refresh_token", "refresh_token": str(winners[0]["refresh_token"])}
    for instance in (b, a):
        status, body = await token_status(instance, renewed)
        assert (status, body["error"]) == (400, "invalid_grant")
