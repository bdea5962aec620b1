"""The log listener benchmark runs end to end and counts what it claims (a smoke test, not a
timed assertion): a lingering listener is woken far less often than once per record, and the
standard library's pair is measured beside the service's handler."""

from __future__ import annotations

from tests.bench.support import report_of


def test_quick_run_reports_each_mode_and_the_wake_ups() -> None:
    report = report_of("log_listener_bench.py", "--requests", "2000", "--rounds", "1")
    standard = next(v for k, v in report.items() if k.startswith("standard library"))
    woken = next(v for k, v in report.items() if k.endswith("woken per record (linger 0)"))
    lingering = next(v for k, v in report.items() if "linger, lines written per burst" in k)
    for mode in (standard, woken, lingering):
        assert mode["cpu_us_per_request"] > 0, report
    # Context switches are counts, not times: one or more per record when woken for each,
    # a small fraction of that when lingering.
    assert standard["context_switches_per_request"] >= 0.5, report
    assert woken["context_switches_per_request"] >= 0.5, report
    assert lingering["context_switches_per_request"] < woken["context_switches_per_request"] / 5
    assert report["written_to"] == "file"
    assert "service / standard library, CPU per record" in report
