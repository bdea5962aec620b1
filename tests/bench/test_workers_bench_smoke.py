"""The workers benchmark's harness runs end to end (a smoke test, not a timed assertion).

``bench/workers_bench.py --quick`` starts ``authgate serve`` with 1 and with 2 workers on one
PostgreSQL database and one Redis, drives each read briefly and prints its report. The figures
of one-second rounds are noise; only that the run completes and reports every figure is
asserted here.
"""

from __future__ import annotations

from typing import Any

from tests.bench.support import report_of


def test_quick_run_completes_and_reports_1_and_2_workers(
    postgres_server: Any, redis_url: str
) -> None:
    report = report_of(
        "workers_bench.py",
        "--quick",
        "--admin-url",
        postgres_server.admin_url,
        "--redis-url",
        redis_url,
    )
    for read in ("health", "account"):
        for workers in (1, 2):
            figures = report["cases"][f"{read}, {workers} worker(s)"]
            assert figures["per_second"] > 0, report
            assert figures["cpu_us"] > 0, report
        assert report[f"{read}: 2/1 requests per second"] > 0, report
