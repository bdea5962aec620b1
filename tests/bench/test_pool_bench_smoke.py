"""The pool benchmark's harness runs end to end (a smoke test, not a timed assertion).

``bench/pool_bench.py --quick`` starts authgate on our PostgreSQL pool and on asyncpg's
(bench/serve_on_asyncpg_pool.py, which the bench checks did open asyncpg's), checks that both
answer the account read with the same bytes, drives each briefly and reports CPU per request.
The figures of one-second rounds are noise; only that the run completes and reports every
figure is asserted here.
"""

from __future__ import annotations

from typing import Any

from tests.bench.support import report_of


def test_quick_run_completes_and_reports_the_ratios(postgres_server: Any) -> None:
    report = report_of("pool_bench.py", "--quick", "--admin-url", postgres_server.admin_url)
    for variant in ("own", "asyncpg"):
        figures = report["variants"][variant]
        assert figures["per_second"] > 0, report
        assert figures["server_us"] > 0, report
        assert figures["backends_us"] > 0, report
    for ratio in ("asyncpg/own total CPU per request", "asyncpg/own server CPU per request"):
        assert report[ratio]["median"] > 0, report
    assert len(report["round_ratios_total"]) == 2, report
