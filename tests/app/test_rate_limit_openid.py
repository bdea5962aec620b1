"""The OpenID Provider's rate limits count by the client address, taken from the connection:
junk from one address never refuses another's requests.

Against running ``authgate serve`` processes (PostgreSQL, the memory rate-limit store or a
Redis of the test's own), called from two loopback source addresses: the junk from 127.0.0.1
(always with ``X-Forwarded-For: 127.0.0.2``, which no trusted proxy wrote and so is not
believed), the person from 127.0.0.2.

* a public client's token budget is its own per client address: 127.0.0.1 flooding junk
  refreshes in the client's name is refused, while the client's real user at 127.0.0.2 goes
  on getting and refreshing tokens, during the flood; with Redis on every instance of the
  cluster;
* failed token requests count against the address that makes them, whatever client they
  name: once spent, that address is refused (even with a good secret) and no other is;
* the per-address limits in front of ``/oauth2/token``, ``/oauth2/authorize``,
  ``/oauth2/userinfo`` and ``/oauth2/logout``, each refusing in its endpoint's format (RFC
  6749 JSON, RFC 6750's challenge, an HTML page) with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import attrs
import pytest

from authgate.adapters.postgres import migrate
from authgate.entrypoints.app.config import ConfigError
from bench.harness import ServiceProcess, mint_session, service_config, write_config
from bench.openid_bench import basic, pkce, seed
from tests.support.postgres import PostgresServer, run_sync
from tests.support.redis_server import RedisProcess

from .conftest import load_config

ISSUER = "https://api.example.com"
SPA_REDIRECT = "https://spa.example.com/cb"
WEB_REDIRECT = "https://web.example.com/cb"
SECRET = "rate-limit-web-secret-of-more-than-thirty-two-characters"
CLIENTS: dict[str, Any] = {
    "spa": {
        "name": "Single-page app",
        "type": "public",
        "redirect_uris": [SPA_REDIRECT],
        "first_party": True,
    },
    "web": {
        "name": "Web app",
        "type": "confidential",
        "secrets": [SECRET],
        "redirect_uris": [WEB_REDIRECT],
        "first_party": True,
    },
}
JUNK_FROM = "127.0.0.1"
USER_FROM = "127.0.0.2"
# Sent with every junk request: a client cannot choose the address it is counted by.
SPOOFED = {"X-Forwarded-For": USER_FROM}
LIMIT = 5
# The provider's limits per client address (ratelimit.token is older).
NEW_KEYS = ["token_address", "token_failures", "authorize", "userinfo", "logout"]


@attrs.frozen
class Database:
    url: str
    account: str


@attrs.frozen
class Answer:
    status: int
    headers: Mapping[str, str]
    text: str


@attrs.frozen
class Cluster:
    """The instances (one, or two sharing a Redis) and how to mint a session for them."""

    urls: list[str]
    keys: Path
    database: Database

    async def session(self) -> str:
        return await mint_session(self.keys, self.database.account, database_url=self.database.url)


@pytest.fixture(scope="module")
def database(postgres_server: PostgresServer) -> Iterator[Database]:
    """One migrated database with one account, for the module's services."""
    name = postgres_server.create_database()
    url = postgres_server.url(name)
    try:
        run_sync(migrate(url))
        yield Database(url, run_sync(seed(url)))
    finally:
        postgres_server.drop_database(name)


@pytest.fixture(params=["memory", "redis"])
def storage(request: pytest.FixtureRequest) -> Iterator[str]:
    """The rate-limit store: this process's memory, or a Redis of this test alone (the counts
    of 127.0.0.1 in a shared Redis would be other tests' too)."""
    if request.param == "memory":
        yield "memory://"
        return
    redis = RedisProcess()
    try:
        redis.start()
        yield redis.url
    finally:
        redis.close()


@asynccontextmanager
async def cluster(
    tmp_path: Path, database: Database, ratelimit: Mapping[str, Any], storage: str = "memory://"
) -> AsyncIterator[Cluster]:
    """``authgate serve`` on 127.0.0.1 with ``ratelimit``: two instances sharing the store
    when it is Redis (a limit spent at one is spent at the other), one with memory."""
    keys = tmp_path / "session-keys.json"
    count = 1 if storage.startswith("memory://") else 2
    async with AsyncExitStack() as stack:
        urls = []
        for label in ("a", "b")[:count]:
            config = service_config(
                tmp_path / label,
                None,
                database_url=database.url,
                ratelimit_storage=storage,
                keys_file=keys,
                overrides={
                    "rest": {"public_url": ISSUER},
                    "clients": CLIENTS,
                    "ratelimit": dict(ratelimit),
                },
            )
            service = ServiceProcess(write_config(tmp_path / label, config))
            urls.append((await stack.enter_async_context(service)).url)
        yield Cluster(urls, keys, database)


@asynccontextmanager
async def sending_from(address: str) -> AsyncIterator[aiohttp.ClientSession]:
    """HTTP whose connections leave from ``address`` (the service listens on 127.0.0.1, which
    Linux reaches from any 127.0.0.0/8 source)."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    async with aiohttp.ClientSession(
        connector=connector, cookie_jar=aiohttp.DummyCookieJar()
    ) as http:
        yield http


async def call(http: aiohttp.ClientSession, method: str, url: str, **kwargs: Any) -> Answer:
    async with http.request(method, url, allow_redirects=False, **kwargs) as response:
        return Answer(response.status, dict(response.headers), await response.text())


async def token(
    http: aiohttp.ClientSession,
    base: str,
    form: Mapping[str, str],
    headers: Mapping[str, str] | None = None,
) -> Answer:
    return await call(http, "POST", f"{base}/oauth2/token", data=dict(form), headers=headers)


def junk_refresh() -> dict[str, str]:
    """A refresh in the public client's name that anyone can send: no secret, a made-up token."""
    return {
        "grant_type": "refresh_token",
        "refresh_token": secrets.token_urlsafe(32),
        "client_id": "spa",
    }


async def code(
    http: aiohttp.ClientSession, base: str, session: str, client_id: str, redirect_uri: str
) -> tuple[str, str]:
    """A code by single sign-on for the session's person, and its PKCE verifier."""
    verifier, challenge = pkce()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": "openid offline_access",
        "state": secrets.token_urlsafe(8),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    answer = await call(
        http,
        "GET",
        f"{base}/oauth2/authorize",
        params=query,
        headers={"Cookie": f"session={session}", "Accept": "text/html"},
    )
    assert answer.status == 302, (answer.status, answer.text[:300])
    location = answer.headers["Location"]
    assert location.startswith(redirect_uri), location
    return parse_qs(urlsplit(location).query)["code"][0], verifier


async def spa_tokens(http: aiohttp.ClientSession, base: str, session: str) -> dict[str, Any]:
    """The public client's code flow, as its page runs it: tokens for ``client_id`` alone."""
    got, verifier = await code(http, base, session, "spa", SPA_REDIRECT)
    form = {
        "grant_type": "authorization_code",
        "code": got,
        "redirect_uri": SPA_REDIRECT,
        "code_verifier": verifier,
        "client_id": "spa",
    }
    return await tokens_of(await token(http, base, form))


async def web_tokens(http: aiohttp.ClientSession, base: str, session: str) -> dict[str, Any]:
    """The confidential client's code flow (its back end authenticates with its secret)."""
    got, verifier = await code(http, base, session, "web", WEB_REDIRECT)
    form = {
        "grant_type": "authorization_code",
        "code": got,
        "redirect_uri": WEB_REDIRECT,
        "code_verifier": verifier,
    }
    return await tokens_of(await token(http, base, form, {"Authorization": basic("web", SECRET)}))


async def tokens_of(answer: Answer) -> dict[str, Any]:
    assert answer.status == 200, (answer.status, answer.text)
    body: dict[str, Any] = json.loads(answer.text)
    assert body["access_token"] and body["id_token"]
    return body


def oauth_429(answer: Answer) -> None:
    """RFC 6749 section 5.2's body, answered 429 with Retry-After, never cached."""
    assert answer.status == 429, (answer.status, answer.text)
    assert int(answer.headers["Retry-After"]) >= 1
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.headers["Content-Type"].startswith("application/json")
    assert json.loads(answer.text)["error"] == "temporarily_unavailable"


def bearer_429(answer: Answer) -> None:
    """RFC 6750's answer: the Bearer challenge names the error, the body repeats it."""
    oauth_429(answer)
    challenge = answer.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ") and 'error="temporarily_unavailable"' in challenge


def page_429(answer: Answer) -> None:
    """The provider's HTML page convention: a page saying so, Retry-After, never cached."""
    assert answer.status == 429, (answer.status, answer.text[:300])
    assert int(answer.headers["Retry-After"]) >= 1
    assert answer.headers["Content-Type"].startswith("text/html")
    assert answer.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
    assert "Too many requests" in answer.text


async def flood_until_refused(send: Callable[[], Awaitable[Answer]], most: int) -> list[Answer]:
    """Junk, one request after another, until one is refused (at most ``most``)."""
    answers = []
    for _ in range(most):
        answers.append(await send())
        if answers[-1].status == 429:
            return answers
    raise AssertionError(f"never refused: {[a.status for a in answers]}")


# -- a public client's refresh -----------------------------------------------------------------


async def test_junk_refreshes_in_a_public_clients_name_never_refuse_its_real_users(
    tmp_path: Path, database: Database, storage: str
) -> None:
    async with (
        cluster(tmp_path, database, {"token": f"{LIMIT}/minute"}, storage) as service,
        sending_from(JUNK_FROM) as junk,
        sending_from(USER_FROM) as user,
    ):
        first, last = service.urls[0], service.urls[-1]
        answers = await flood_until_refused(
            lambda: token(junk, first, junk_refresh(), SPOOFED), 3 * LIMIT
        )
        assert [a.status for a in answers] == [400] * LIMIT + [429]
        oauth_429(answers[-1])
        # Counted for the whole cluster: the other instance refuses that address too.
        oauth_429(await token(junk, last, junk_refresh(), SPOOFED))

        # The junk goes on while the client's real user, elsewhere, signs in and refreshes.
        done = asyncio.Event()

        async def keep_flooding() -> list[int]:
            statuses = []
            while not done.is_set():
                for base in service.urls:
                    statuses.append((await token(junk, base, junk_refresh(), SPOOFED)).status)
            return statuses

        async def person() -> None:
            try:
                session = await service.session()
                issued = await spa_tokens(user, last, session)
                for _ in range(2):
                    form = {
                        "grant_type": "refresh_token",
                        "refresh_token": issued["refresh_token"],
                        "client_id": "spa",
                    }
                    issued = await tokens_of(await token(user, first, form))
            finally:
                done.set()

        flooded, _ = await asyncio.gather(keep_flooding(), person())
        assert flooded and set(flooded) == {429}


# -- failed requests count against the caller's address ----------------------------------------


async def test_failed_token_requests_refuse_the_address_that_made_them_and_no_other(
    tmp_path: Path, database: Database, storage: str
) -> None:
    ratelimit = {"token": f"{LIMIT}/minute", "token_failures": f"{LIMIT}/minute"}
    async with (
        cluster(tmp_path, database, ratelimit, storage) as service,
        sending_from(JUNK_FROM) as junk,
        sending_from(USER_FROM) as user,
    ):
        first, last = service.urls[0], service.urls[-1]
        form = {"grant_type": "refresh_token", "refresh_token": "junk"}
        # A new client name every time does not make new budgets; a wrong secret of a real
        # client spends nothing of that client's own budget.
        wrong = [
            ({**form, "client_id": f"made-up-{n}"}, SPOOFED)
            if n % 2
            else (form, {**SPOOFED, "Authorization": basic("web", "wrong" * 8)})
            for n in range(2 * LIMIT)
        ]
        statuses = [(await token(junk, first, f, h)).status for f, h in wrong]
        assert statuses[:LIMIT] == [401] * LIMIT and set(statuses[LIMIT:]) == {429}
        # Refused before anything, at every instance: even the right secret from there.
        right = {"Authorization": basic("web", SECRET)}
        oauth_429(await token(junk, last, form, right))
        # Another address is not: the confidential client's own budget is whole.
        session = await service.session()
        issued = await web_tokens(user, last, session)
        refresh = {"grant_type": "refresh_token", "refresh_token": issued["refresh_token"]}
        await tokens_of(await token(user, first, refresh, right))


# -- the per-address limits in front of the four endpoints -------------------------------------


async def junk_authorize(http: aiohttp.ClientSession, base: str) -> Answer:
    query = {"client_id": secrets.token_hex(4), "response_type": "code"}
    return await call(
        http,
        "GET",
        f"{base}/oauth2/authorize",
        params=query,
        headers={**SPOOFED, "Accept": "text/html"},
    )


async def junk_userinfo(http: aiohttp.ClientSession, base: str) -> Answer:
    headers = {**SPOOFED, "Authorization": f"Bearer {secrets.token_urlsafe(16)}"}
    return await call(http, "GET", f"{base}/oauth2/userinfo", headers=headers)


async def junk_logout(http: aiohttp.ClientSession, base: str) -> Answer:
    query = {"client_id": "spa", "state": secrets.token_hex(4)}
    return await call(http, "GET", f"{base}/oauth2/logout", params=query, headers=SPOOFED)


async def junk_token(http: aiohttp.ClientSession, base: str) -> Answer:
    return await token(http, base, {"grant_type": "authorization_code", "code": "x"}, SPOOFED)


async def user_authorize(http: aiohttp.ClientSession, base: str, cluster: Cluster) -> None:
    await code(http, base, await cluster.session(), "spa", SPA_REDIRECT)


async def user_userinfo(http: aiohttp.ClientSession, base: str, cluster: Cluster) -> None:
    issued = await web_tokens(http, base, await cluster.session())
    headers = {"Authorization": f"Bearer {issued['access_token']}"}
    answer = await call(http, "GET", f"{base}/oauth2/userinfo", headers=headers)
    assert answer.status == 200, (answer.status, answer.text)
    assert '"sub"' in answer.text


async def user_logout(http: aiohttp.ClientSession, base: str, cluster: Cluster) -> None:
    """A signed-in person the application sends to sign out: asked to confirm."""
    headers = {"Cookie": f"session={await cluster.session()}"}
    query = {"client_id": "spa"}
    answer = await call(http, "GET", f"{base}/oauth2/logout", params=query, headers=headers)
    assert answer.status == 200, (answer.status, answer.text[:300])
    assert "Sign out of authgate?" in answer.text


async def user_token(http: aiohttp.ClientSession, base: str, cluster: Cluster) -> None:
    await spa_tokens(http, base, await cluster.session())


ENDPOINTS = {
    # ratelimit key: (the junk, how it is refused, the other address's real use)
    "authorize": (junk_authorize, page_429, user_authorize),
    "userinfo": (junk_userinfo, bearer_429, user_userinfo),
    "logout": (junk_logout, page_429, user_logout),
    "token_address": (junk_token, oauth_429, user_token),
}


@pytest.mark.parametrize("limit", ENDPOINTS)
async def test_junk_from_one_address_spends_that_address_only(
    tmp_path: Path, database: Database, limit: str
) -> None:
    send_junk, refused, real_use = ENDPOINTS[limit]
    # The failures' limit is the token endpoint's other per-address limit: off here, so that
    # token_address alone is seen.
    ratelimit = {limit: f"{LIMIT}/minute", "token_failures": None}
    async with (
        cluster(tmp_path, database, ratelimit) as service,
        sending_from(JUNK_FROM) as junk,
        sending_from(USER_FROM) as user,
    ):
        [base] = service.urls
        answers = await flood_until_refused(lambda: send_junk(junk, base), 3 * LIMIT)
        assert len(answers) == LIMIT + 1 and 429 not in [a.status for a in answers[:-1]]
        refused(answers[-1])
        await real_use(user, base, service)
        refused(await send_junk(junk, base))  # still refused: the real use spent none of it


# -- the defaults ----------------------------------------------------------------------------


async def test_the_defaults_limit_authorize_logout_and_failures_per_address(
    tmp_path: Path, database: Database
) -> None:
    """Nothing configured: authorize (300/minute), logout (60/minute) and failed token
    requests (60/minute) are refused to the address that spent them, and only to it."""
    made_up = iter(range(1000))

    async def junk_failure(http: aiohttp.ClientSession, base: str) -> Answer:
        form = {"grant_type": "refresh_token", "refresh_token": "x", "client_id": "spa"}
        return await token(http, base, {**form, "client_id": f"made-up-{next(made_up)}"}, SPOOFED)

    defaults = [
        (junk_authorize, 300, page_429, user_authorize),
        (junk_logout, 60, page_429, user_logout),
        (junk_failure, 60, oauth_429, user_token),
    ]
    async with (
        cluster(tmp_path, database, {}) as service,
        sending_from(JUNK_FROM) as junk,
        sending_from(USER_FROM) as user,
    ):
        [base] = service.urls
        for send_junk, allowed, refused, real_use in defaults:
            answers = await flood_until_refused(partial(send_junk, junk, base), allowed + 10)
            assert len(answers) == allowed + 1, [a.status for a in answers]
            refused(answers[-1])
            await real_use(user, base, service)


@pytest.mark.parametrize("key", NEW_KEYS)
@pytest.mark.parametrize("value", ["lots", "5/fortnight", "0/minute", "5/minute;100/hour"])
def test_a_malformed_provider_limit_is_a_one_line_config_error(
    tmp_path: Path, key: str, value: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, {"ratelimit": {key: value}})
    message = str(raised.value)
    assert message == f"ratelimit.{key}: {value!r} is not one rate limit such as '10/minute'"


@pytest.mark.parametrize("key", NEW_KEYS)
def test_null_switches_a_provider_limit_off(tmp_path: Path, key: str) -> None:
    assert getattr(load_config(tmp_path, {"ratelimit": {key: None}}).ratelimit, key) is None
