"""The account-read benchmark's harness runs end to end (a smoke test, not a timed assertion).

``bench/providers_bench.py --quick`` starts authgate (access log on and off) and the raw
aiohttp + asyncpg handler on one PostgreSQL database, checks that the three answer the read
with the same bytes, drives each briefly and prints its report. The figures of one-second
rounds are noise; only that the run completes and reports every figure is asserted here.
"""

from __future__ import annotations

from typing import Any

from tests.bench.support import report_of


def test_quick_run_completes_and_reports_the_ratios(postgres_server: Any) -> None:
    report = report_of("providers_bench.py", "--quick", "--admin-url", postgres_server.admin_url)
    for server in ("authgate", "authgate-nolog", "raw", "raw-asyncpg"):
        figures = report["servers"][server]
        assert figures["per_second"] > 0, report
        assert figures["cpu_us"] > 0, report
    for ratio in (
        "authgate/raw",
        "authgate-nolog/raw",
        "authgate/raw by CPU",
        "authgate/raw-asyncpg",
        "authgate/raw-asyncpg by CPU",
    ):
        assert report[ratio] > 0, report
    assert report["target"] == 0.8
