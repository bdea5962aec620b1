"""`authgate migrate` and start-up against the configured database, as an operator runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.app.conftest import base_config, merge
from tests.install.support import dev_config
from tests.support.ports import free_port


def write_config(tmp_path: Path, database_url: str) -> Path:
    path = tmp_path / "authgate.yaml"
    config = merge(base_config(tmp_path), {"database": {"url": database_url}})
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def authgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "authgate.entrypoints.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_migrate_applies_once_and_then_reports_up_to_date(
    tmp_path: Path, empty_postgres_url: str
) -> None:
    config = str(write_config(tmp_path, empty_postgres_url))
    first = authgate("migrate", "--config", config)
    assert first.returncode == 0, first.stderr
    files = sorted(p.stem for p in (Path(__file__).parents[2] / "migrations").glob("*.sql"))
    assert files[0] == "0001_initial"
    assert f"applied {len(files)} migration(s): {', '.join(files)}" in first.stdout
    second = authgate("migrate", "--config", config)
    assert second.returncode == 0, second.stderr
    assert "the database schema is up to date" in second.stdout


def test_serve_refuses_a_database_whose_schema_is_behind(
    tmp_path: Path, empty_postgres_url: str
) -> None:
    """Refused before anything is made: no session key file, no development Apple key (both
    would otherwise be created at the first start)."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    config = dev_config(free_port(), empty_postgres_url, workdir)
    config["providers"]["apple"] = {
        "issuer": config["providers"]["google"]["issuer"],
        "client_id": "dev.authgate.services",
        "token_endpoint_auth": "apple_client_secret_jwt",
        "team_id": "DEVTEAM001",
        "key_id": "DEVKEY0001",
        "private_key_file": str(workdir / "var" / "dev-apple-key.pem"),
        "response_mode": "form_post",
        "scopes": ["name", "email"],
    }
    path = tmp_path / "authgate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    result = authgate("serve", "--config", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "authgate migrate --config FILE" in lines[0]
    assert "Traceback" not in result.stderr
    assert list(workdir.rglob("*")) == []


def test_serve_refuses_an_unreachable_database_in_one_line(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, "postgresql://authgate:s3cret@127.0.0.1:1/authgate"))
    result = authgate("serve", "--config", config)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "cannot connect to PostgreSQL" in lines[0]
    assert "s3cret" not in result.stderr


def test_migrate_has_nothing_to_do_for_sqlite(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, f"sqlite:///{tmp_path}/a.db"))
    result = authgate("migrate", "--config", config)
    assert result.returncode == 0
    assert "nothing to migrate for sqlite" in result.stdout


@pytest.mark.parametrize("command", ["serve", "migrate"])
@pytest.mark.parametrize(
    "database_url",
    [
        "postgresql://authgate@127.0.0.1:1/authgate?password=SECRET",
        "postgresql://authgate:SECRET@127.0.0.1:1/authgate?sslpassword=SECRET&sslmode=prefer",
        "postgresql://authgate:SECRET@127.0.0.1:notaport/authgate",
        "postgresql://authgate:SECRET@[::1/authgate",
    ],
)
def test_no_credential_of_the_database_url_is_printed(
    tmp_path: Path, command: str, database_url: str
) -> None:
    config = str(write_config(tmp_path, database_url))
    result = authgate(command, "--config", config)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "cannot connect to PostgreSQL" in lines[0]
    assert "SECRET" not in result.stderr + result.stdout


def test_an_unsupported_database_url_is_named_without_its_password(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, "mysql://authgate:SECRET@db/authgate?token=SECRET"))
    result = authgate("serve", "--config", config)
    assert result.returncode == 2
    assert "unsupported database 'mysql://authgate:***@db/authgate?token=***'" in result.stderr
    assert "SECRET" not in result.stderr
