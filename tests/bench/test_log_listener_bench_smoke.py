"""The log listener benchmark runs end to end and counts what it claims (a smoke test, not a
timed assertion): a lingering listener is woken far less often than once per record."""

from __future__ import annotations

from tests.bench.support import report_of


def test_quick_run_reports_each_mode_and_the_wake_ups() -> None:
    report = report_of("log_listener_bench.py", "--requests", "2000", "--rounds", "1")
    woken = report["a wake-up per record (linger 0)"]
    lingering = next(v for k, v in report.items() if k.startswith("lingering ("))
    for mode in (woken, lingering):
        assert mode["cpu_us_per_request"] > 0, report
    # Context switches are counts, not times: one or more per record when woken for each,
    # a small fraction of that when lingering.
    assert woken["context_switches_per_request"] >= 0.5, report
    assert lingering["context_switches_per_request"] < woken["context_switches_per_request"] / 5
