"""The files where the service keeps secrets are owner-only, whatever the umask:
the folders it creates 0700, the SQLite database (and its -wal/-shm), the session keys and the
development Apple key 0600."""

from __future__ import annotations

import logging
import os
import stat
import urllib.request
from pathlib import Path

import pytest

from authgate.adapters.jose import load_or_create_keys
from authgate.entrypoints.devidp.keys import ensure_apple_key_file

from .test_serve_access_log import serving


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_serve_creates_the_database_and_keys_owner_only(tmp_path: Path, umask: int) -> None:
    var = tmp_path / "fresh" / "var"
    overrides = {
        "database": {"url": f"sqlite:///{var}/authgate.db"},
        "session": {"keys_file": str(var / "keys" / "session-keys.json"), "generate_keys": True},
    }
    with serving(tmp_path, {}, overrides, umask=umask) as (port, _):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/readiness") as response:
            assert response.status == 200
        # While the database is open in WAL mode its side files exist.
        files = ["authgate.db", "authgate.db-wal", "authgate.db-shm", "keys/session-keys.json"]
        modes = {name: mode(var / name) for name in files}
        folders = {f: mode(tmp_path / f) for f in ("fresh", "fresh/var", "fresh/var/keys")}
    assert modes == dict.fromkeys(files, 0o600)
    assert folders == dict.fromkeys(folders, 0o700)


def test_an_existing_folder_is_left_as_it_is(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    overrides = {"database": {"url": f"sqlite:///{shared}/authgate.db"}}
    with serving(tmp_path, {}, overrides):
        assert mode(shared / "authgate.db") == 0o600
    assert mode(shared) == 0o755


def test_an_exposed_existing_database_gets_a_warning(tmp_path: Path) -> None:
    db = tmp_path / "authgate.db"
    db.touch()
    db.chmod(0o644)
    overrides = {"database": {"url": f"sqlite:///{db}"}}
    with serving(tmp_path, {}, overrides) as (_, stderr):
        pass
    (line,) = [x for x in stderr[0].splitlines() if " WARNING " in x and "authgate.db" in x]
    assert "has mode 0644" in line
    assert mode(db) == 0o644  # the operator's choice stays


@pytest.fixture
def open_umask() -> object:
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("open_umask")
def test_the_development_apple_key_is_owner_only(tmp_path: Path) -> None:
    key = tmp_path / "var" / "dev" / "apple-key.pem"
    assert ensure_apple_key_file(key)
    assert mode(key) == 0o600
    assert mode(key.parent) == 0o700
    assert mode(key.parent.parent) == 0o700
    assert b"PRIVATE KEY" in key.read_bytes()


@pytest.mark.usefixtures("open_umask")
def test_the_session_key_file_is_owner_only(tmp_path: Path) -> None:
    keys = tmp_path / "var" / "session-keys.json"
    assert load_or_create_keys(keys, create=True).keys
    assert mode(keys) == 0o600
    assert mode(keys.parent) == 0o700


def test_an_exposed_session_key_file_gets_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = tmp_path / "session-keys.json"
    load_or_create_keys(keys, create=True)
    keys.chmod(0o640)
    with caplog.at_level(logging.WARNING, logger="authgate.storage"):
        load_or_create_keys(keys, create=False)
    (record,) = caplog.records
    assert "has mode 0640" in record.getMessage()
