"""The start-up benchmark runs end to end (a smoke test, not a timed assertion).

``bench/startup_bench.py --quick`` starts ``authgate serve`` on the embedded default three
times (an uncounted first start, a fresh folder, a warm restart) and prints its JSON report.
Its figures on a shared machine are noise; only that every start reached readiness and was
measured is asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "startup_bench.py"
FIGURES = ("live_seconds", "ready_seconds", "ready_cpu_seconds", "idle_rss_kib")


def test_quick_run_completes_and_reports_every_figure() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["starts"] == 1
    for kind in ("first_start", "fresh", "warm"):
        for figure in FIGURES:
            assert report[kind][figure] > 0, (kind, figure, report)
