"""A SQLite file written before ``email_verified`` existed (schema version 1) is upgraded when
the service opens it, and its accounts read back as unverified."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from authgate.adapters.sqlite import open_sqlite
from authgate.adapters.sqlite.schema import VERSIONS
from authgate.domain.model import ProviderIdentity


def _file_at_version_1(path: Path) -> None:
    """A file as the first schema version left it, holding one account and its identity."""
    with sqlite3.connect(path) as conn:
        for statement in VERSIONS[0]:
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "INSERT INTO accounts (id, email, name, created_at) VALUES "
            "('acc-old', 'old@example.com', 'Old Timer', '2024-05-01T12:00:00.000000+00:00')"
        )
        conn.execute(
            "INSERT INTO identities (provider, subject, account_id, email, linked_at, is_primary)"
            " VALUES ('facebook', 'fb-old', 'acc-old', 'old@example.com',"
            " '2024-05-01T12:00:00.000000+00:00', 1)"
        )
    conn.close()


async def test_a_version_1_file_is_upgraded_and_its_accounts_read_unverified(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    _file_at_version_1(path)
    store = await open_sqlite(path)
    try:
        account = await store.accounts.get("acc-old")
        assert account is not None
        assert (account.email, account.email_verified) == ("old@example.com", False)
        found = await store.accounts.find_by_identity(ProviderIdentity("facebook", "fb-old"))
        assert found == account
        [linked] = await store.accounts.list_identities("acc-old")
        assert (linked.email, linked.email_verified) == ("old@example.com", False)
        async with store.db.use() as conn:
            [(version,)] = list(await conn.execute_fetchall("PRAGMA user_version"))
        assert version == len(VERSIONS)
    finally:
        await store.close()
