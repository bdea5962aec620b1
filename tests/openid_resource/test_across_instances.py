"""Two instances behind one PostgreSQL: a token made inactive on one is inactive on the other
at once, for every reason there is. The other instance has found the token active first
(so its session is in that instance's cache), and the cache is long (60 s): only the
revocation channel (a revoked session) or the database itself (a family, an account) can
explain the other instance's answer."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.openid_resource.conftest import Issued, Person, Provider, basic, start_provider

GRACE = FakeUser(sub="grace-1", email="grace@example.com", name="Grace G")
# What "at once" allows the revocation channel (LISTEN/NOTIFY) between two instances.
CHANNEL_SECONDS = 2.0


@pytest.fixture
async def pair(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    clean_postgres_url: str,
    tmp_path: Path,
) -> tuple[Provider, Provider]:
    """Two instances: one database, one key file (tmp_path's), the PostgreSQL channel."""
    extra = {"session": {"revocation_cache_seconds": 60, "revocation_channel": "postgres"}}
    a = await start_provider(make_service, fake_idp, idp_clock, clean_postgres_url, extra)
    b = await start_provider(make_service, fake_idp, idp_clock, clean_postgres_url, extra)
    return a, b


async def issued_and_seen(a: Provider, b: Provider) -> tuple[Person, Issued]:
    """A person signed in at ``a``, tokens issued there, found active at both."""
    person = await a.sign_in(GRACE)
    issued = await a.issue(person)
    assert issued.refresh_token is not None
    for instance in (a, b):
        assert await instance.active(issued.access_token)
        assert await instance.active(issued.refresh_token)
    return person, issued


async def inactive_within(instance: Provider, token: str, seconds: float) -> float:
    """How long until ``instance`` says ``token`` is inactive (fails after ``seconds``)."""
    started = time.monotonic()
    while await instance.active(token):
        if time.monotonic() - started > seconds:
            pytest.fail(f"still active after {seconds} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def test_a_session_revoked_on_one_instance(pair: tuple[Provider, Provider]) -> None:
    a, b = pair
    person, issued = await issued_and_seen(a, b)
    ended = await a.client.delete(
        f"/v1/account/sessions/{person.session_id}",
        headers={"Authorization": f"Bearer {person.session_token}"},
    )
    assert ended.status == 204
    assert not await a.active(issued.access_token)
    await inactive_within(b, issued.access_token, CHANNEL_SECONDS)
    assert issued.refresh_token is not None
    assert not await b.active(issued.refresh_token)
    assert not await b.active(person.session_token)


async def test_an_account_deleted_on_one_instance(pair: tuple[Provider, Provider]) -> None:
    a, b = pair
    person, issued = await issued_and_seen(a, b)
    deleted = await a.client.delete(
        "/v1/account", headers={"Authorization": f"Bearer {person.session_token}"}
    )
    assert deleted.status == 204
    # Its families went with it: no channel needed.
    assert not await b.active(issued.access_token)
    assert issued.refresh_token is not None
    assert not await b.active(issued.refresh_token)


async def test_a_family_revoked_on_one_instance(pair: tuple[Provider, Provider]) -> None:
    a, b = pair
    person, issued = await issued_and_seen(a, b)
    assert issued.refresh_token is not None
    revoked = await a.client.post(
        "/oauth2/revoke", data={"token": issued.refresh_token}, headers=basic("web")
    )
    assert revoked.status == 200
    assert not await b.active(issued.access_token)
    assert not await b.active(issued.refresh_token)
    # The session itself lives on.
    assert await b.active(person.session_token)


async def test_an_application_withdrawn_on_one_instance(pair: tuple[Provider, Provider]) -> None:
    a, b = pair
    person, issued = await issued_and_seen(a, b)
    withdrawn = await a.client.delete(
        "/v1/account/apps/web", headers={"Authorization": f"Bearer {person.session_token}"}
    )
    assert withdrawn.status == 204
    assert not await b.active(issued.access_token)
    assert issued.refresh_token is not None
    assert not await b.active(issued.refresh_token)
