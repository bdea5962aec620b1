"""The sign-in benchmark runs end to end (a smoke run, no timing asserted).

``bench/signin_bench.py`` with a couple of seconds per phase: registrations alone, then logins
alone after the warm-up registered their users, on a fresh PostgreSQL database each, against
authgate and then against the raw floor (bench/raw_signin_server.py). Asserted for both
servers: no failed sign-in (an answer the driver does not take, or rows not written: one
session and one event per sign-in, one account and identity per registration), each phase
measured only its own kind, and the figures the benchmark reports (sign-ins per server CPU
second with its user/system split, the callback's p50/p99, the ratio authgate/raw) are there.
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
        for server, phase in (
            ("authgate", report[name]),
            ("raw", report[name]["raw"]),
            ("raw-asyncpg", report[name]["raw-asyncpg"]),
        ):
            assert phase["errors"] == 0, (server, phase)
            assert phase["sign_ins"] > 0, (server, phase)
            # the phase measured its own kind alone
            assert phase["other_sign_ins"] == 0, (server, phase)
            assert phase["sign_ins_per_server_cpu_second"] > 0
            # PostgreSQL's backends worked for the sign-ins too, and count in the headline
            assert phase["database_cpu_seconds"] > 0, (server, phase)
            assert 0 < phase["sign_ins_per_cpu_second"] < phase["sign_ins_per_server_cpu_second"]
            assert 0 < phase["callback_p50_ms"] <= phase["callback_p99_ms"]
            assert phase["latency"][f"sign_in_{kind}"]["count"] == phase["sign_ins"]
            split = phase["server_cpu_user_seconds"] + phase["server_cpu_system_seconds"]
            assert abs(split - phase["server_cpu_seconds"]) <= 0.05, (server, phase)
        assert report[name]["ratio_to_raw"] > 0
        assert report[name]["ratio_to_raw_asyncpg"] > 0
    assert "per CPU second (server and PostgreSQL" in run.stderr and "target 0.95" in run.stderr
    # per phase, the floor on authgate's pool and on asyncpg's
    assert run.stderr.count("raw floor") == 4 and "authgate/raw-asyncpg" in run.stderr


def test_alternating_rounds_report_medians_and_every_rounds_ratio(
    postgres_server: PostgresServer,
) -> None:
    # --rounds: authgate and the floor alternate, each round on a fresh database and server.
    command = [sys.executable, str(BENCH), "--seconds", "1", "--users", "20", "--rounds", "2"]
    run = subprocess.run(
        [*command, "--phase", "registrations", "--admin-url", postgres_server.admin_url],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    phase = json.loads(run.stdout)["registrations"]
    assert len(phase["rounds"]) == 2 and len(phase["round_ratios"]) == 2
    assert phase["errors"] == 0 and phase["raw"]["errors"] == 0
    figures = sorted(r["authgate"] for r in phase["rounds"])
    assert phase["sign_ins_per_cpu_second"] in figures
    assert phase["ratio_to_raw"] in phase["round_ratios"]
    assert "rounds" in run.stderr and "median" in run.stderr
