"""The embedded SQLite store: a file that outlives the process, shared safely."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from pathlib import Path

import pytest

from authgate.adapters.sql.housekeeping import PURGE_BATCH
from authgate.adapters.sqlite import SqliteStore, SqliteUnavailable, open_sqlite
from authgate.adapters.sqlite.schema import VERSIONS
from authgate.domain.model import ProviderIdentity
from tests.support.records import T0, at, event, pending, verified


async def _count(store: SqliteStore, table: str) -> int:
    async with store.db.use() as conn:
        rows = list(await conn.execute_fetchall(f"SELECT count(*) FROM {table}"))
    return int(rows[0][0])


async def test_an_account_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "var" / "authgate.db"  # the folder does not exist yet
    store = await open_sqlite(path)
    account, created = await store.accounts.create_with_identity(verified("google", "g"), T0)
    await store.accounts.link_identity(account.id, verified("apple", "a"), at(1))
    await store.accounts.record_login(account.id, at(2))
    before = await store.accounts.list_identities(account.id)
    await store.close()
    assert created and path.is_file()

    reopened = await open_sqlite(path)
    try:
        found = await reopened.accounts.find_by_identity(ProviderIdentity("google", "g"))
        assert found is not None
        assert (found.id, found.created_at, found.last_login_at) == (account.id, T0, at(2))
        assert await reopened.accounts.list_identities(account.id) == before
        again, created = await reopened.accounts.create_with_identity(
            verified("google", "g"), at(3)
        )
        assert (again.id, created) == (account.id, False)
    finally:
        await reopened.close()


async def test_the_file_uses_wal_foreign_keys_and_the_current_schema(tmp_path: Path) -> None:
    store = await open_sqlite(tmp_path / "a.db")
    try:
        async with store.db.use() as conn:
            pragmas = [
                next(iter(await conn.execute_fetchall(f"PRAGMA {name}")))[0]
                for name in ("journal_mode", "foreign_keys", "user_version")
            ]
        assert pragmas == ["wal", 1, len(VERSIONS)]
    finally:
        await store.close()
    # Reopening applies nothing again.
    store = await open_sqlite(tmp_path / "a.db")
    await store.close()


async def test_two_processes_on_one_file_create_one_account(tmp_path: Path) -> None:
    # Two stores = two connections, as two service processes sharing the file would have.
    path = tmp_path / "shared.db"
    first, second = await asyncio.gather(open_sqlite(path), open_sqlite(path))
    try:
        v = verified("facebook", "race")
        results = await asyncio.gather(
            *((first if i % 2 else second).accounts.create_with_identity(v, T0) for i in range(40))
        )
        assert sum(created for _, created in results) == 1
        assert len({a.id for a, _ in results}) == 1
        assert await _count(first, "accounts") == 1

        await first.states.put(pending("shared-state"))
        takes = await asyncio.gather(
            *(
                (first if i % 2 else second).states.take("google", "shared-state", "b" * 64, at(1))
                for i in range(20)
            )
        )
        assert sum(t is not None for t in takes) == 1
    finally:
        await first.close()
        await second.close()


async def test_no_account_is_left_without_its_identity(tmp_path: Path) -> None:
    store = await open_sqlite(tmp_path / "a.db")
    try:
        await asyncio.gather(
            *(store.accounts.create_with_identity(verified(subject="x"), T0) for _ in range(20))
        )
        assert await _count(store, "accounts") == 1
        assert await _count(store, "identities") == 1
    finally:
        await store.close()


async def test_expired_states_and_old_events_are_purged_by_traffic(tmp_path: Path) -> None:
    store = await open_sqlite(tmp_path / "a.db", purge_interval=dt.timedelta(0))
    try:
        for i in range(5):
            await store.states.put(pending(f"old-{i}", created=T0, ttl=dt.timedelta(minutes=1)))
        await store.states.put(pending("new", created=T0 + dt.timedelta(hours=1)))
        assert await _count(store, "sign_in_states") == 1

        await store.events.record(event(0))
        await store.events.record(event(dt.timedelta(days=91).total_seconds()))
        assert [e.at for e in await store.events.recent()] == [T0 + dt.timedelta(days=91)]
    finally:
        await store.close()


async def test_purges_wait_for_their_interval(tmp_path: Path) -> None:
    store = await open_sqlite(tmp_path / "a.db", purge_interval=dt.timedelta(minutes=5))
    try:
        await store.states.put(pending("first", created=T0, ttl=dt.timedelta(minutes=1)))
        await store.states.put(pending("second", created=T0 + dt.timedelta(hours=1)))
        # The first put ran the purge (nothing was expired then); the second is too soon.
        assert await _count(store, "sign_in_states") == 2
    finally:
        await store.close()


async def test_a_large_purge_lets_other_operations_run_between_its_batches(
    tmp_path: Path,
) -> None:
    """A purge holds the connection (and the file's write lock) one batch at a time: an
    operation that arrives while it runs goes before the rest of the backlog."""
    backlog = 10 * PURGE_BATCH
    store = await open_sqlite(tmp_path / "a.db")
    try:
        async with store.db.use() as conn:
            await conn.execute(
                """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO sign_in_states (lookup, binding_hash, provider, redirect_uri,
                    intent, created_at, expires_at)
                SELECT 'old-' || i, 'b', 'google', 'https://cb.example', 'login', ?, ? FROM n
                """,
                (backlog, T0.isoformat(), T0.isoformat()),
            )
        purge = asyncio.create_task(store.states.purge_expired(at(1)))
        await asyncio.sleep(0)  # the purge has the connection
        assert await store.states.take("google", "other", "b" * 64, at(1)) is None
        assert not purge.done()
        assert await purge == backlog
        assert await _count(store, "sign_in_states") == 0
    finally:
        await store.close()


async def test_a_file_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(SqliteUnavailable, match="schema version 99"):
        await open_sqlite(path)


async def test_an_unusable_path_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SqliteUnavailable, match="a-file"):
        await open_sqlite(blocker / "authgate.db")


async def test_in_memory_database(tmp_path: Path) -> None:
    store = await open_sqlite(":memory:")
    try:
        await store.ping()
        _, created = await store.accounts.create_with_identity(verified(), T0)
        assert created
    finally:
        await store.close()


async def test_a_cancelled_operation_leaves_no_transaction_open(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    holder, waiter = await open_sqlite(path), await open_sqlite(path)
    try:
        async with holder.db.transaction():  # another process holds the write lock
            blocked = asyncio.create_task(
                waiter.accounts.create_with_identity(verified("google", "cancelled"), T0)
            )
            await asyncio.sleep(0.2)  # waiting in BEGIN IMMEDIATE (busy timeout)
            blocked.cancel()
            await asyncio.sleep(0.05)
        # The other process commits; the cancelled BEGIN then succeeds on its thread.
        with pytest.raises(asyncio.CancelledError):
            await blocked
        # The waiter's connection is usable and not stuck inside a transaction.
        account, created = await waiter.accounts.create_with_identity(verified("apple", "a"), T0)
        assert created
        assert await holder.accounts.find_by_identity(ProviderIdentity("apple", "a")) == account
        cancelled = ProviderIdentity("google", "cancelled")
        assert await holder.accounts.find_by_identity(cancelled) is None
    finally:
        await holder.close()
        await waiter.close()
