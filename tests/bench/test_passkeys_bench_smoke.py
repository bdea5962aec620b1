"""The passkey benchmark runs end to end (a smoke run, no timing asserted): passkey sign-ins
and provider sign-ins on one server on PostgreSQL, then passkey sign-ins on the raw floor
(bench/raw_passkeys_server.py) with the same passkeys, every answer checked, the three
figures and the ratio authgate/floor reported; and the callgrind variant
(bench/passkeys_instructions.py) counts both servers' instructions per sign-in."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.support import report_of
from tests.support.postgres import PostgresServer

BENCH = Path(__file__).resolve().parents[2] / "bench" / "passkeys_bench.py"


def test_a_short_run_measures_passkey_and_provider_sign_ins_and_the_floor(
    postgres_server: PostgresServer,
) -> None:
    command = [sys.executable, str(BENCH), "--seconds", "1", "--users", "3", "--concurrency", "4"]
    run = subprocess.run(
        [*command, "--admin-url", postgres_server.admin_url],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(run.stdout)
    phases = ("passkeys", "provider", "raw_floor", "raw_floor_asyncpg")
    for phase in (report[name] for name in phases):
        assert phase["errors"] == 0, phase
        assert phase["sign_ins"] > 0, phase
        assert phase["sign_ins_per_server_cpu_second"] > 0, phase
    assert report["passkey_over_provider"] > 0
    assert report["passkey_over_raw_floor"] > 0
    assert report["passkey_over_raw_floor_asyncpg"] > 0
    assert "passkey sign-ins:" in run.stderr and "per server CPU second" in run.stderr
    assert "raw floor" in run.stderr and "authgate/floor" in run.stderr
    assert "on asyncpg's pool" in run.stderr and "on authgate's pool" in run.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_short_run_counts_the_instructions_of_authgate_and_the_floor(
    postgres_server: PostgresServer,
) -> None:
    report = report_of(
        "passkeys_instructions.py",
        *("--operations", "10", "--users", "2", "--admin-url", postgres_server.admin_url),
        timeout=600,
    )
    for server in ("authgate", "floor", "floor-asyncpg"):
        assert report[server]["sign_ins"] == 10, report
        assert report[server]["instructions_per_sign_in"] > 100_000, report
    assert 0 < report["floor/authgate"] < 2
    assert 0 < report["floor-asyncpg/authgate"] < 2
