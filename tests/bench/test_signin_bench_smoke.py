"""The sign-in benchmark runs end to end (a smoke run, no timing asserted).

``bench/signin_bench.py`` with a couple of seconds per phase: registrations alone, then logins
alone after the warm-up registered their users, on a fresh PostgreSQL database each. Asserted:
no failed sign-in, each phase measured only its own kind, and the figures the benchmark
reports (sign-ins per server CPU second, the callback's p50/p99) are there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.postgres import PostgresServer

BENCH = Path(__file__).resolve().parents[2] / "bench" / "signin_bench.py"


def test_a_short_run_measures_registrations_and_logins_apart(
    postgres_server: PostgresServer,
) -> None:
    command = [sys.executable, str(BENCH), "--seconds", "2", "--users", "30"]
    run = subprocess.run(
        [*command, "--admin-url", postgres_server.admin_url],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert report["database"] == "postgres"
    for name, kind in (("registrations", "register"), ("logins", "login")):
        phase = report[name]
        assert phase["errors"] == 0, phase
        assert phase["sign_ins"] > 0, phase
        assert phase["other_sign_ins"] == 0, phase  # the phase measured its own kind alone
        assert phase["sign_ins_per_server_cpu_second"] > 0
        assert 0 < phase["callback_p50_ms"] <= phase["callback_p99_ms"]
        assert phase["latency"][f"sign_in_{kind}"]["count"] == phase["sign_ins"]
    assert "per server CPU second (target 800)" in run.stderr
