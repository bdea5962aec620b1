"""On SQLite, deciding whether a token is still active only reads: introspection and userinfo
answer while another process holds the file's write lock (``BEGIN IMMEDIATE``), instead of
waiting behind it for the busy timeout and failing. Writing through a unit that only reads is
refused, so that a read path cannot take the lock unnoticed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from authgate.adapters.sqlite.store import SqliteUnitOfWork
from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.openid_resource.conftest import Provider, start_provider

EVE = FakeUser(sub="eve-1", email="eve@example.com", name="Eve E")


@pytest.fixture
async def sqlite_provider(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, tmp_path: Path
) -> tuple[Provider, Path]:
    path = tmp_path / "authgate.db"
    provider = await start_provider(make_service, fake_idp, idp_clock, f"sqlite:///{path}")
    return provider, path


async def test_a_token_check_answers_while_another_process_holds_the_write_lock(
    sqlite_provider: tuple[Provider, Path],
) -> None:
    provider, path = sqlite_provider
    person = await provider.sign_in(EVE)
    issued = await provider.issue(person, scopes=("openid", "email", "offline_access"))
    assert issued.refresh_token is not None
    assert await provider.active(issued.access_token)  # the session is cached live now

    writer = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        # another process's writer, holding the lock: a write transaction of the service
        # would wait for it up to the busy timeout and then fail
        writer.execute("BEGIN IMMEDIATE")
        introspected = await provider.introspect(issued.access_token)
        assert introspected.status == 200, await introspected.text()
        assert (await introspected.json())["active"] is True
        refresh = await provider.introspect(issued.refresh_token)
        assert refresh.status == 200, await refresh.text()
        assert (await refresh.json())["active"] is True
        info = await provider.userinfo(issued.access_token)
        assert info.status == 200, await info.text()
        assert (await info.json())["sub"] == person.account_id
    finally:
        writer.execute("ROLLBACK")
        writer.close()


async def test_a_unit_that_only_reads_refuses_to_write(
    sqlite_provider: tuple[Provider, Path],
) -> None:
    provider, _ = sqlite_provider
    person = await provider.sign_in(EVE)
    issued = await provider.issue(person)
    units = provider.resources.stores.units
    assert isinstance(units, SqliteUnitOfWork)
    now = provider.clock.now()
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        async with units.read() as tx:
            assert await tx.refresh_tokens.is_family_live(issued.family_id, now)
            await tx.refresh_tokens.revoke_family(issued.family_id, now)
    # nothing was written, and the connection writes again afterwards
    async with units.begin() as tx:
        assert await tx.refresh_tokens.is_family_live(issued.family_id, now)
        assert await tx.refresh_tokens.revoke_family(issued.family_id, now)
    assert not await provider.active(issued.access_token)
