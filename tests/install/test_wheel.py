"""The built package is complete: a wheel (built from the sdist) installed into a fresh virtual
environment migrates PostgreSQL and serves from any directory, with no checkout in sight."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import yaml

from tests.support.ports import free_port
from tests.support.postgres import run_sync

from .support import Browser, dev_config, run, wait_ready

ROOT = Path(__file__).resolve().parents[2]
# The PostgreSQL schema, at the top of the tree (not under src/).
MIGRATIONS = sorted((ROOT / "migrations").glob("*.sql"))
# Files the service reads at run time besides its modules (swagger-ui comes from its package),
# as the wheel holds them: the migrations are mapped into the package.
ASSETS = sorted(
    [f"authgate/migrations/{p.name}" for p in MIGRATIONS]
    + [
        f"authgate/{p.relative_to(ROOT / 'src').as_posix()}"
        for p in (ROOT / "src").glob("entrypoints/demo/static/*")
    ]
)

# What a checkout holds that a fresh clone does not.
LEFTOVERS = (
    ".git",
    ".venv",
    "*.egg-info",
    "build",
    "dist",
    "var",
    "test-artifacts",
    "__pycache__",
    ".*_cache",
)


def _uv() -> list[str]:
    probe = subprocess.run(
        [sys.executable, "-m", "uv", "--version"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        pytest.skip("uv is not installed in this environment (scripts/bootstrap installs it)")
    return [sys.executable, "-m", "uv"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The ``bin`` folder of a new virtual environment holding the built wheel and the locked
    runtime dependencies, nothing else."""
    uv = _uv()
    tmp = tmp_path_factory.mktemp("install")
    # From a copy of the source without build leftovers: setuptools would otherwise take the
    # file list of a stale authgate.egg-info/SOURCES.txt and hide a missing package-data entry.
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*LEFTOVERS))
    # `uv build` makes the sdist, then the wheel from the unpacked sdist: both must carry
    # everything.
    run(*uv, "build", "--quiet", "--out-dir", str(tmp / "dist"), str(source))
    [sdist] = (tmp / "dist").glob("authgate-*.tar.gz")
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    # The sdist is the source tree: the migrations where a checkout has them.
    assert (
        MIGRATIONS and [p.name for p in MIGRATIONS if f"migrations/{p.name}" not in in_sdist] == []
    )
    assert not [name for name in in_sdist if name.startswith("src/migrations")]
    [wheel] = (tmp / "dist").glob("authgate-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert ASSETS and [a for a in ASSETS if a not in names] == []
    venv = tmp / "venv"
    run(*uv, "venv", "--quiet", "--python", sys.executable, str(venv))
    python = str(venv / "bin" / "python")
    lock = str(ROOT / "requirements" / "runtime.lock")
    run(*uv, "pip", "sync", "--quiet", "--python", python, "--require-hashes", lock)
    run(*uv, "pip", "install", "--quiet", "--python", python, "--no-deps", str(wheel))
    yield venv / "bin"
    shutil.rmtree(venv, ignore_errors=True)


def _env() -> dict[str, str]:
    """This process's environment without anything that would point at the checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "AUTHGATE_MIGRATIONS_DIR", "VIRTUAL_ENV")
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


async def _accounts(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM accounts"))
    finally:
        await conn.close()


def test_the_installed_wheel_migrates_serves_and_signs_in(
    installed: Path, empty_postgres_url: str, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"  # an unrelated working directory
    elsewhere.mkdir()
    env = _env()
    where = run(
        str(installed / "python"),
        "-c",
        "import authgate.adapters.postgres.migrations as m; print(m.migrations_dir())",
        cwd=elsewhere,
        env=env,
    ).stdout.strip()
    # The packaged copy, inside the new environment: not the checkout's src/.
    assert Path(where).is_relative_to(installed.parent), where
    assert Path(where).name == "migrations"

    port = free_port()
    config = elsewhere / "authgate.yaml"
    config.write_text(yaml.safe_dump(dev_config(port, empty_postgres_url, elsewhere)))
    authgate = str(installed / "authgate")

    migrated = run(authgate, "migrate", "--config", config.name, cwd=elsewhere, env=env)
    applied = [p.stem for p in MIGRATIONS]
    assert f"applied {len(applied)} migration(s): {', '.join(applied)}" in migrated.stdout

    log = elsewhere / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [authgate, "serve", "--config", config.name],
            cwd=elsewhere,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, lambda: None if process.poll() is None else log.read_text())
        account = Browser(base).sign_in("ada")
        assert account["email"] == "ada@example.test"
        assert run_sync(_accounts(empty_postgres_url)) == 1  # stored in PostgreSQL
        status, _, _ = Browser(base).request("GET", "/health/readiness")
        assert status == 200
        # The packaged static files: the demo page (development) and Swagger UI's bundle.
        for path in ("/demo", "/docs", "/docs/assets/swagger-ui-bundle.js", "/docs/assets/docs.js"):
            status, _, body = Browser(base).request("GET", path)
            assert status == 200, (path, body[:200])
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode == 0, log.read_text()
