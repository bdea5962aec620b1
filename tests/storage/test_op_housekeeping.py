"""The OpenID Provider's expired rows are purged by traffic on the SQL stores, as sign-in
states and sessions are: issuing a code, starting a token family or remembering a session's
client purges what expired before it (here at every trigger: a zero interval), through a unit
of work too."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from authgate.adapters.postgres import PostgresStore
from tests.support.oauth_records import code, family, new_account, refresh, session_client
from tests.support.records import T0
from tests.support.stores import Store, open_store

HOUR = dt.timedelta(hours=1)


@pytest.fixture(params=["sqlite", "postgres", "postgres-asyncpg-pool"])
async def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    postgres = request.param.startswith("postgres")
    url = request.getfixturevalue("clean_postgres_url") if postgres else None
    opened = await open_store(
        request.param,
        sqlite_path=tmp_path / "authgate.db",
        postgres_url=url,
        purge_interval=dt.timedelta(0),
    )
    try:
        yield opened
    finally:
        await opened.close()


async def _settled(store: Store) -> None:
    """PostgreSQL purges in the background; SQLite already did, inline."""
    if isinstance(store, PostgresStore):
        await store.housekeeping_idle()


async def test_expired_codes_families_tokens_and_session_clients_are_purged_by_traffic(
    sql_store: Store,
) -> None:
    store = sql_store
    account = await new_account(store)
    await store.authorization_codes.add(code(account, "old"))
    await store.refresh_tokens.start_family(
        family(account, "old"), refresh(account, "rt-old", "old", expires_at=T0 + HOUR)
    )
    await store.session_clients.add(session_client(account, "old", expires_at=T0 + HOUR))
    await _settled(store)

    later = T0 + 2 * HOUR
    async with store.units.begin() as tx:
        await tx.authorization_codes.add(
            code(account, "new", created_at=later, expires_at=later + dt.timedelta(seconds=60))
        )
        await tx.refresh_tokens.start_family(
            family(account, "new", created_at=later, expires_at=later + HOUR)
        )
        await tx.session_clients.add(
            session_client(account, "new", first_at=later, expires_at=later + HOUR)
        )
    await _settled(store)

    assert await store.authorization_codes.redeem("old", T0) is None
    assert await store.authorization_codes.redeem("new", later) is not None
    assert await store.refresh_tokens.get("rt-old") is None
    assert [f.family_id for f in await store.refresh_tokens.for_account(account)] == ["new"]
    assert [c.session_id for c in await store.session_clients.for_account(account)] == ["new"]
