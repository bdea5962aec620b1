"""The pool benchmark's harness runs end to end (a smoke test, not a timed assertion).

``bench/pool_bench.py --quick`` starts authgate on our PostgreSQL pool and on asyncpg's
(bench/serve_on_asyncpg_pool.py, which the bench checks did open asyncpg's), checks that both
answer the account read with the same bytes, drives each briefly and reports CPU per request.
The figures of one-second rounds are noise; only that the run completes and reports every
figure is asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench" / "pool_bench.py"


def test_quick_run_completes_and_reports_the_ratios(postgres_server: Any) -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--admin-url", postgres_server.admin_url],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    for variant in ("own", "asyncpg"):
        figures = report["variants"][variant]
        assert figures["per_second"] > 0, report
        assert figures["server_us"] > 0, report
        assert figures["backends_us"] > 0, report
    for ratio in ("asyncpg/own total CPU per request", "asyncpg/own server CPU per request"):
        assert report[ratio]["median"] > 0, report
    assert len(report["round_ratios_total"]) == 2, report
