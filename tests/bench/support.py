"""A benchmark script run as the smoke tests run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"


def report_of(script: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    """The JSON report ``bench/<script>`` prints when run with ``args``; the test fails, with
    the run's output, when the run fails."""
    run = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report
