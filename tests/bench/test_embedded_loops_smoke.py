"""The embedded default's event-loop benchmark runs end to end (a smoke test, not a timed
assertion): ``bench/embedded_loops.py --quick`` serves the embedded default on each loop,
measures it idle and under a short load of both endpoints, and every answer was a 200."""

from __future__ import annotations

from tests.bench.support import report_of


def test_quick_run_measures_both_loops() -> None:
    report = report_of("embedded_loops.py", "--quick", timeout=180)
    assert report["rounds"] == 1
    for loop in ("asyncio", "uvloop"):
        figures = report["median"][loop]
        assert figures["idle_rss_mib"] > 0, report
        for path in ("/health/liveness", "/health/readiness"):
            assert figures[f"{path} per CPU second"] > 0, (loop, path, report)
    assert set(report["uvloop / asyncio"]) == set(report["median"]["asyncio"])
