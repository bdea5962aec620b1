"""The start-up benchmark runs end to end (a smoke test, not a timed assertion).

``bench/startup_bench.py --quick`` starts ``authgate serve`` on the embedded default three
times (an uncounted first start, a fresh folder, a warm restart) and prints its JSON report.
Its figures on a shared machine are noise; only that every start reached readiness and was
measured is asserted here.
"""

from __future__ import annotations

from tests.bench.support import report_of

FIGURES = ("live_seconds", "ready_seconds", "ready_cpu_seconds", "idle_rss_kib")


def test_quick_run_completes_and_reports_every_figure() -> None:
    report = report_of("startup_bench.py", "--quick", timeout=180)
    assert report["starts"] == 1
    for kind in ("first_start", "fresh", "warm"):
        for figure in FIGURES:
            assert report[kind][figure] > 0, (kind, figure, report)
