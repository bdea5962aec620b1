"""The PostgreSQL schema: ordered files applied once, concurrent runs, a database behind."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
import pytest
import yaml

from authgate.adapters.postgres import (
    DatabaseUnavailable,
    MigrationEdited,
    MigrationFailed,
    MigrationsNotFound,
    PostgresStoreError,
    SchemaBehind,
    check_schema,
    migrate,
    open_postgres,
)
from authgate.adapters.postgres.migrations import (
    migration_files,
    migrations_dir,
    pending_migrations,
)
from authgate.domain.model import ProviderIdentity
from tests.app.conftest import base_config, merge
from tests.support.ports import free_port

# One copy of the schema, at the top of the tree (mapped into a wheel as authgate/migrations).
REPO_MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def _folder(tmp_path: Path, **extra: str) -> Path:
    """A migrations folder: the repository's files plus ``extra`` (name -> SQL)."""
    folder = tmp_path / "migrations"
    shutil.copytree(REPO_MIGRATIONS, folder)
    for name, sql in extra.items():
        (folder / f"{name}.sql").write_text(sql)
    return folder


async def _tables(url: str) -> set[str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {r["tablename"] for r in rows}
    finally:
        await conn.close()


def test_the_repository_migrations_are_found_in_order() -> None:
    assert migrations_dir() == REPO_MIGRATIONS
    names = [p.name for p in migration_files()]
    assert names == sorted(names)
    assert names[0].startswith("0001_")


async def test_migrate_applies_everything_once(empty_postgres_url: str) -> None:
    wanted = [p.stem for p in migration_files()]
    assert await pending_migrations(empty_postgres_url) == wanted
    assert await migrate(empty_postgres_url) == wanted
    assert await migrate(empty_postgres_url) == []
    await check_schema(empty_postgres_url)
    assert {"accounts", "identities", "sign_in_states", "sign_in_events"} <= await _tables(
        empty_postgres_url
    )


async def test_concurrent_migrations_on_two_connections(empty_postgres_url: str) -> None:
    results = await asyncio.gather(*(migrate(empty_postgres_url) for _ in range(4)))
    assert sorted(results, key=len) == [[], [], [], [p.stem for p in migration_files()]]


async def test_concurrent_migrations_from_two_processes(empty_postgres_url: str) -> None:
    # `authgate migrate` started on two hosts at once: separate processes, one database.
    script = (
        "import asyncio, json, sys\n"
        "from authgate.adapters.postgres import migrate\n"
        "print(json.dumps(asyncio.run(migrate(sys.argv[1]))))\n"
    )
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            script,
            empty_postgres_url,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outputs = await asyncio.gather(*(p.communicate() for p in procs))
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()
    applied = sorted((json.loads(out) for out, _ in outputs), key=len)
    assert applied == [[], [p.stem for p in migration_files()]]
    await check_schema(empty_postgres_url)


async def test_check_schema_refuses_an_empty_database(empty_postgres_url: str) -> None:
    with pytest.raises(SchemaBehind) as caught:
        await check_schema(empty_postgres_url)
    assert "authgate migrate --config FILE" in str(caught.value)
    assert caught.value.pending == [p.stem for p in migration_files()]


async def test_check_schema_refuses_a_database_one_migration_behind(
    empty_postgres_url: str, tmp_path: Path
) -> None:
    await migrate(empty_postgres_url)
    newer = _folder(tmp_path, **{"0999_newer": "CREATE TABLE newer (id int PRIMARY KEY);"})
    with pytest.raises(SchemaBehind, match=r"0999_newer.*authgate migrate --config FILE"):
        await check_schema(empty_postgres_url, newer)
    assert await migrate(empty_postgres_url, newer) == ["0999_newer"]
    await check_schema(empty_postgres_url, newer)
    # A database ahead of the code (a newer deployment migrated it) is accepted.
    await check_schema(empty_postgres_url)


async def test_open_postgres_refuses_a_database_behind(
    empty_postgres_url: str, asyncpg_pool: bool
) -> None:
    with pytest.raises(SchemaBehind, match="authgate migrate --config FILE"):
        await open_postgres(empty_postgres_url, 1, 2, 5.0, asyncpg_pool=asyncpg_pool)
    unchecked = await open_postgres(
        empty_postgres_url, 1, 2, 5.0, check=False, asyncpg_pool=asyncpg_pool
    )
    with pytest.raises(SchemaBehind):
        await check_schema(unchecked.pool)
    await unchecked.close()


async def test_a_failing_migration_leaves_no_trace(empty_postgres_url: str, tmp_path: Path) -> None:
    broken = _folder(
        tmp_path,
        **{"0999_broken": "CREATE TABLE half_done (id int);\nSELECT no_such_function();"},
    )
    with pytest.raises(MigrationFailed, match=r"0999_broken\.sql.*no_such_function") as caught:
        await migrate(empty_postgres_url, broken)
    assert isinstance(caught.value.__cause__, asyncpg.UndefinedFunctionError)
    # The files before it are applied; the broken one is rolled back whole and stays pending.
    assert "half_done" not in await _tables(empty_postgres_url)
    assert await pending_migrations(empty_postgres_url, broken) == ["0999_broken"]
    (broken / "0999_broken.sql").write_text("CREATE TABLE half_done (id int);")
    assert await migrate(empty_postgres_url, broken) == ["0999_broken"]


def test_a_missing_migrations_folder_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTHGATE_MIGRATIONS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(MigrationsNotFound, match="AUTHGATE_MIGRATIONS_DIR"):
        migrations_dir()
    monkeypatch.setenv("AUTHGATE_MIGRATIONS_DIR", str(REPO_MIGRATIONS))
    assert migrations_dir() == REPO_MIGRATIONS


def test_badly_named_migration_files_are_refused(tmp_path: Path) -> None:
    folder = _folder(tmp_path, **{"2_oops": "SELECT 1;"})
    with pytest.raises(MigrationsNotFound, match=r"2_oops\.sql"):
        migration_files(folder)


async def test_migrate_against_an_unreachable_server_is_a_clear_error() -> None:
    url = f"postgresql://authgate:s3cret@127.0.0.1:{free_port()}/authgate"
    with pytest.raises(DatabaseUnavailable) as caught:
        await migrate(url)
    assert isinstance(caught.value, PostgresStoreError)
    assert isinstance(caught.value, ConnectionError)  # also caught as an OSError
    assert "s3cret" not in str(caught.value)
    with pytest.raises(DatabaseUnavailable):
        await check_schema(url)


async def test_migrate_from_0001_keeps_existing_accounts_as_unverified(
    empty_postgres_url: str, tmp_path: Path
) -> None:
    # A deployment at 0001 with an account whose email nobody recorded as verified.
    at_0001 = tmp_path / "at_0001"
    at_0001.mkdir()
    shutil.copy(REPO_MIGRATIONS / "0001_initial.sql", at_0001)
    assert await migrate(empty_postgres_url, at_0001) == ["0001_initial"]
    account_id = uuid.uuid4()
    created = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
    conn = await asyncpg.connect(empty_postgres_url)
    try:
        await conn.execute(
            "INSERT INTO accounts (id, email, name, created_at) VALUES ($1, $2, $3, $4)",
            account_id,
            "old@example.com",
            "Old Timer",
            created,
        )
        await conn.execute(
            "INSERT INTO identities (provider, subject, account_id, email, linked_at, is_primary)"
            " VALUES ('facebook', 'fb-old', $1, 'old@example.com', $2, true)",
            account_id,
            created,
        )
    finally:
        await conn.close()

    # The operator's upgrade step, as a real process.
    config = tmp_path / "authgate.yaml"
    config.write_text(
        yaml.safe_dump(
            merge(base_config(tmp_path), {"database": {"url": empty_postgres_url}}),
            sort_keys=False,
        )
    )
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "authgate.entrypoints.cli", "migrate", "--config", str(config)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    later = [p.stem for p in migration_files()][1:]
    assert later[0] == "0002_email_verified"
    assert f"applied {len(later)} migration(s): {', '.join(later)}" in out.decode()

    store = await open_postgres(empty_postgres_url, 1, 2, 5.0)
    try:
        account = await store.accounts.get(str(account_id))
        assert account is not None
        assert (account.email, account.email_verified) == ("old@example.com", False)
        found = await store.accounts.find_by_identity(ProviderIdentity("facebook", "fb-old"))
        assert found == account
        [linked] = await store.accounts.list_identities(str(account_id))
        assert (linked.email, linked.email_verified) == ("old@example.com", False)
    finally:
        await store.close()


def _authgate(config: Path, command: str, migrations: Path) -> subprocess.CompletedProcess[str]:
    """``authgate COMMAND --config CONFIG`` as an operator runs it, on the folder ``migrations``."""
    return subprocess.run(
        [sys.executable, "-m", "authgate.entrypoints.cli", command, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "AUTHGATE_MIGRATIONS_DIR": str(migrations)},
    )


def _config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "authgate.yaml"
    config.write_text(
        yaml.safe_dump(merge(base_config(tmp_path), {"database": {"url": url}}), sort_keys=False)
    )
    return config


async def test_an_edited_applied_migration_is_refused_by_migrate_and_serve(
    empty_postgres_url: str, tmp_path: Path
) -> None:
    folder = _folder(tmp_path)
    await migrate(empty_postgres_url, folder)
    edited = folder / "0002_email_verified.sql"
    applied_text = edited.read_text()
    edited.write_text(applied_text + "\nCREATE INDEX later ON accounts (name);\n")
    # A new migration beside the edit: nothing at all may be applied while the edit stands.
    (folder / "0999_next.sql").write_text("CREATE TABLE next_one (id int PRIMARY KEY);")
    config = _config(tmp_path, empty_postgres_url)

    for command in ("migrate", "serve"):
        result = await asyncio.to_thread(_authgate, config, command, folder)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert "0002_email_verified.sql was edited after it was applied" in lines[0]
        assert "Traceback" not in result.stderr
    assert await pending_migrations(empty_postgres_url, folder) == ["0999_next"]
    assert "next_one" not in await _tables(empty_postgres_url)
    with pytest.raises(MigrationEdited) as caught:
        await check_schema(empty_postgres_url, folder)
    assert caught.value.file_name == "0002_email_verified.sql"
    assert isinstance(caught.value, PostgresStoreError)

    # The applied text restored: the pending migration goes through.
    edited.write_text(applied_text)
    result = await asyncio.to_thread(_authgate, config, "migrate", folder)
    assert result.returncode == 0, result.stderr
    assert "applied 1 migration(s): 0999_next" in result.stdout
    await check_schema(empty_postgres_url, folder)


async def test_the_checksum_compares_only_the_files_this_version_has(
    empty_postgres_url: str, tmp_path: Path
) -> None:
    # A newer deployment applied 0999; this version does not have the file: nothing to compare,
    # and the database ahead is accepted as before.
    newer = _folder(tmp_path, **{"0999_newer": "CREATE TABLE newer (id int PRIMARY KEY);"})
    await migrate(empty_postgres_url, newer)
    await check_schema(empty_postgres_url)
    assert await migrate(empty_postgres_url) == []
