"""Two ``authgate serve`` instances behind one address: one PostgreSQL database (migrated with
``authgate migrate``), one Redis, one session key file.

* a sign-in started on one instance completes on the other (the state is in PostgreSQL,
  ``state.store: database``), and each accepts the other's session tokens;
* the callback rate limit is exact across both: 10 per minute per client address in total
  (Redis; the address comes from ``X-Forwarded-For``, ``ratelimit.trusted_proxies:
  [127.0.0.1/32]``, one address per test run so that Redis keys never collide);
* 100 concurrent first sign-ins of one identity across both create exactly one account.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import asyncpg
import attrs
import pytest

from bench.harness import (
    ServiceProcess,
    SignInDriver,
    migrate,
    service_config,
    write_config,
)
from tests.fakeidp import FakeIdP, FakeUser
from tests.support.postgres import PostgresServer


@attrs.frozen
class Pair:
    a: ServiceProcess
    b: ServiceProcess
    database_url: str

    @property
    def urls(self) -> tuple[str, str]:
        return self.a.url, self.b.url


def unique_address() -> str:
    """A client address no other run uses (documentation prefix 2001:db8::/32)."""
    return f"2001:db8:{secrets.token_hex(2)}:{secrets.token_hex(2)}::{secrets.token_hex(2)}"


def subject_of(token: str) -> str:
    payload = token.split(".")[1]
    return str(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"])


@pytest.fixture
async def pair(
    tmp_path: Path, fake_idp: FakeIdP, postgres_server: PostgresServer, redis_url: str
) -> AsyncIterator[Pair]:
    name = postgres_server.create_database()
    url = postgres_server.url(name)
    keys = tmp_path / "session-keys.json"
    try:
        files = []
        for label in ("a", "b"):
            config = service_config(
                tmp_path / label,
                fake_idp,
                database_url=url,
                ratelimit_storage=redis_url,
                keys_file=keys,
                overrides={
                    "state": {"store": "database"},
                    "ratelimit": {"trusted_proxies": ["127.0.0.1/32"]},
                },
            )
            files.append(write_config(tmp_path / label, config))
        await asyncio.to_thread(migrate, files[0])
        async with AsyncExitStack() as stack:
            a = await stack.enter_async_context(ServiceProcess(files[0]))  # creates the keys
            b = await stack.enter_async_context(ServiceProcess(files[1]))
            yield Pair(a, b, url)
    finally:
        postgres_server.drop_database(name)


async def test_a_sign_in_started_on_one_completes_on_the_other(
    pair: Pair, fake_idp: FakeIdP
) -> None:
    a, b = pair.urls
    xff = {"X-Forwarded-For": unique_address()}
    async with SignInDriver(fake_idp) as driver:
        one = await driver.complete(
            a, user=FakeUser(sub="roamer"), intent="register", finish_on=b, headers=xff
        )
        assert one.signed_in, one
        two = await driver.complete(b, user=FakeUser(sub="roamer"), finish_on=a, headers=xff)
        assert two.signed_in, two
        assert one.session is not None and two.session is not None
        assert subject_of(one.session) == subject_of(two.session)
        for base, token in ((a, two.session), (b, one.session)):
            status, body = await driver.linked_providers(base, token)
            assert status == 200
            assert [p["providerId"] for p in body["providers"]] == ["user:google:roamer"]
        # the state is single-use across instances too
        details, binding = await driver.begin(a, "google", intent="login", headers=xff)
        back = await fake_idp.authorize(details["authorizationUrl"], user=FakeUser(sub="roamer"))
        first = await driver.callback(b, "google", back.params, binding=binding, headers=xff)
        replay = await driver.callback(a, "google", back.params, binding=binding, headers=xff)
        assert first.signed_in
        assert replay.status == 401 and '"invalid_state"' in replay.body


async def test_the_callback_rate_limit_is_exact_across_both(pair: Pair, fake_idp: FakeIdP) -> None:
    a, b = pair.urls
    xff = {"X-Forwarded-For": unique_address()}
    async with SignInDriver(fake_idp) as driver:
        results = await asyncio.gather(
            *(
                driver.callback(
                    (a, b)[i % 2],
                    "google",
                    {"code": f"c{i}", "state": f"not-a-state-{i}"},
                    binding=None,
                    headers=xff,
                )
                for i in range(40)
            )
        )
        statuses = [r.status for r in results]
        assert statuses.count(429) == 30, statuses
        assert statuses.count(401) == 10, statuses  # let through, then refused by the state
        limited = [r for r in results if r.status == 429]
        assert all('"rate_limited"' in r.body for r in limited)
        # another address is not affected
        other = await driver.callback(
            b,
            "google",
            {"code": "c", "state": "s"},
            binding=None,
            headers={"X-Forwarded-For": unique_address()},
        )
        assert other.status == 401


async def test_100_concurrent_first_sign_ins_of_one_identity_make_one_account(
    pair: Pair, fake_idp: FakeIdP
) -> None:
    a, b = pair.urls
    person = FakeUser(sub="one-person", email="one@example.com")
    count = 100
    async with SignInDriver(fake_idp) as driver:
        started = []
        for i in range(count):
            xff = {"X-Forwarded-For": unique_address()}
            details, binding = await driver.begin(
                (a, b)[i % 2], "google", intent="register", headers=xff
            )
            back = await fake_idp.authorize(details["authorizationUrl"], user=person)
            started.append((back, binding, xff))
        results = await asyncio.gather(
            *(
                driver.callback((b, a)[i % 2], "google", back.params, binding=binding, headers=xff)
                for i, (back, binding, xff) in enumerate(started)
            )
        )
    assert all(r.signed_in for r in results), [r for r in results if not r.signed_in][:3]
    subjects = {subject_of(r.session) for r in results if r.session is not None}
    assert len(subjects) == 1
    conn = await asyncpg.connect(pair.database_url)
    try:
        accounts = await conn.fetch("SELECT id FROM accounts")
        identities = await conn.fetch("SELECT account_id FROM identities")
    finally:
        await conn.close()
    assert len(accounts) == 1
    assert len(identities) == 1
    assert str(accounts[0]["id"]) == subjects.pop()
    # the first sign-in went to onboarding, every other one was a plain login
    destinations = [r.location for r in results]
    assert sum("/onboarding" in (d or "") for d in destinations) == 1
