"""The provider misbehaves; a real ``authgate serve`` (SQLite) keeps its promises.

* token endpoint down (500), slower than ``providers.google.timeout_seconds``, or answering
  garbage: the callback redirects with ``authentication_failed`` / ``token_exchange_failed``
  within the timeout plus a margin; the state is consumed (the same callback again is 401
  ``invalid_state``); no account is created or changed;
* JWKS endpoint down: the cached key set keeps verifying ID tokens;
* a flood of ID tokens with unknown ``kid``: each fails with ``invalid_id_token``, and the
  provider's JWKS is fetched again at most once per floor between fetches (5 s); a genuine key
  rotation seconds later is followed at once (issue point 2).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.harness import ServiceProcess, SignInDriver, service_config, write_config
from tests.fakeidp import FakeIdP, FakeUser, Tamper, TokenMode

TIMEOUT = 1.0  # providers.google.timeout_seconds
MARGIN = 2.0  # what the bound allows beyond the provider timeout (loaded 2-core CI machine)
LOGIN = "https://app.example.com/login"
FLOOR = 5.0  # the default jwks_min_refetch_seconds


@pytest.fixture
async def service(tmp_path: Path, fake_idp: FakeIdP) -> AsyncIterator[ServiceProcess]:
    config = service_config(
        tmp_path,
        fake_idp,
        database_url=f"sqlite:///{tmp_path / 'authgate.db'}",
        overrides={
            "providers": {"google": {"timeout_seconds": TIMEOUT}},
            "ratelimit": {"callback": "10000/minute"},
        },
    )
    async with ServiceProcess(write_config(tmp_path, config)) as process:
        yield process


def accounts(service: ServiceProcess) -> list[tuple[str, str, str | None]]:
    """(account id, identity, last login) of every account, read from the service's file."""
    path = service.config_file.parent / "authgate.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return sorted(
            db.execute(
                "SELECT a.id, i.provider || ':' || i.subject, a.last_login_at "
                "FROM accounts a LEFT JOIN identities i ON i.account_id = a.id"
            ).fetchall()
        )


@pytest.mark.parametrize("mode", [TokenMode.DOWN, TokenMode.SLOW, TokenMode.GARBAGE])
async def test_token_endpoint_failure_is_authentication_failed(
    service: ServiceProcess, fake_idp: FakeIdP, mode: TokenMode
) -> None:
    async with SignInDriver(fake_idp) as driver:
        known = await driver.complete(
            service.url, user=FakeUser(sub="known-user"), intent="register"
        )
        assert known.signed_in
        before = accounts(service)

        fake_idp.google.token_mode = mode
        fake_idp.google.slow_seconds = 10 * TIMEOUT
        for who, intent in (("new-user", "register"), ("known-user", "login")):
            details, binding = await driver.begin(service.url, "google", intent=intent)
            back = await fake_idp.authorize(details["authorizationUrl"], user=FakeUser(sub=who))
            started = time.monotonic()
            result = await driver.callback(service.url, "google", back.params, binding=binding)
            elapsed = time.monotonic() - started
            assert result.status == 302, result
            assert result.location is not None and result.location.startswith(LOGIN)
            assert result.redirect_query == {
                "error": "authentication_failed",
                "reason": "token_exchange_failed",
            }
            assert result.session is None
            assert elapsed < TIMEOUT + MARGIN, elapsed
            # the state was consumed: the same callback cannot be replayed
            again = await driver.callback(service.url, "google", back.params, binding=binding)
            assert again.status == 401, again
            assert '"invalid_state"' in again.body

        assert accounts(service) == before  # nothing created, no last login moved
        assert fake_idp.google.hits["token"] >= 2
        fake_idp.google.token_mode = TokenMode.OK
        assert (await driver.complete(service.url, user=FakeUser(sub="known-user"))).signed_in
    assert "Traceback" not in service.log()


async def test_cached_keys_keep_verifying_while_the_jwks_is_down(
    service: ServiceProcess, fake_idp: FakeIdP
) -> None:
    async with SignInDriver(fake_idp) as driver:
        first = await driver.complete(service.url, user=FakeUser(sub="jwks-0"), intent="register")
        assert first.signed_in
        fetched = fake_idp.google.hits["jwks"]
        assert fetched == 1

        fake_idp.google.jwks_down = True
        results = await asyncio.gather(
            *(
                driver.complete(service.url, user=FakeUser(sub=f"jwks-{i}"), intent="register")
                for i in range(1, 11)
            )
        )
        assert all(r.signed_in for r in results), results
        assert fake_idp.google.hits["jwks"] == fetched  # served from the cache


async def test_an_unknown_kid_flood_is_bounded_and_a_rotation_after_it_is_followed(
    service: ServiceProcess, fake_idp: FakeIdP
) -> None:
    flood = 40
    async with SignInDriver(fake_idp) as driver:
        first = await driver.complete(service.url, user=FakeUser(sub="kid-0"), intent="register")
        assert first.signed_in
        assert fake_idp.google.hits["jwks"] == 1
        before = accounts(service)
        await asyncio.sleep(FLOOR + 0.2)  # so that the flood's unknown kids may fetch

        fake_idp.google.tamper = Tamper.UNKNOWN_KID
        started = time.monotonic()
        results = await asyncio.gather(
            *(
                driver.complete(service.url, user=FakeUser(sub=f"kid-{i}"), intent="register")
                for i in range(1, flood + 1)
            )
        )
        elapsed = time.monotonic() - started
        assert {r.status for r in results} == {302}
        assert all(
            r.redirect_query == {"error": "authentication_failed", "reason": "invalid_id_token"}
            for r in results
        ), results
        # 40 tokens, each with a kid of its own: one on-demand fetch per floor, not 40.
        refetches = fake_idp.google.hits["jwks"] - 1
        assert 1 <= refetches <= 1 + int(elapsed / FLOOR), (refetches, elapsed)
        assert accounts(service) == before

        # The provider really rotates its keys seconds later: followed, not a minute later.
        fake_idp.google.tamper = None
        await asyncio.sleep(FLOOR + 0.2)
        fake_idp.google.rotate_keys()
        rotated = await driver.complete(service.url, user=FakeUser(sub="kid-0"))
        assert rotated.signed_in, rotated
        assert fake_idp.google.hits["jwks"] == refetches + 2
    assert "Traceback" not in service.log()
