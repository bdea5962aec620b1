"""The workers benchmark's harness runs end to end (a smoke test, not a timed assertion).

``bench/workers_bench.py --quick`` starts ``authgate serve`` with 1 and with 2 workers on one
PostgreSQL database and one Redis, drives each read briefly and prints its report. The figures
of one-second rounds are noise; only that the run completes and reports every figure is
asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench" / "workers_bench.py"


def test_quick_run_completes_and_reports_1_and_2_workers(
    postgres_server: Any, redis_url: str
) -> None:
    run = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--quick",
            "--admin-url",
            postgres_server.admin_url,
            "--redis-url",
            redis_url,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    for read in ("health", "account"):
        for workers in (1, 2):
            figures = report["cases"][f"{read}, {workers} worker(s)"]
            assert figures["per_second"] > 0, report
            assert figures["cpu_us"] > 0, report
        assert report[f"{read}: 2/1 requests per second"] > 0, report
