"""The REST layer benchmark's harness runs end to end (a smoke test, not a timed assertion).

``bench/rest_layer.py --quick`` starts its eight servers (authgate on both loops, traced, raw
aiohttp and the peers on their production stacks), checks that they answer alike, drives each
briefly and prints its table and ratios. The figures of a few tenths of a second are noise;
only that the run completes and reports is asserted here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "rest_layer.py"


def test_quick_run_completes_and_prints_the_ratios() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "equivalence: all 8 servers answer the 6 probes alike" in out
    for server in (
        "authgate",
        "authgate-traced",
        "raw-aiohttp",
        "authgate-asyncio",
        "fastapi-h11",
        "fastapi",
        "litestar",
        "blacksheep",
    ):
        assert re.search(rf"^{server} +\d+ ", out, re.MULTILINE), out
    for ratio in (
        "authgate/raw-aiohttp",
        "authgate-traced/raw-aiohttp",
        "authgate/fastapi",
        "authgate/litestar",
        "authgate/blacksheep",
    ):
        assert re.search(rf"^ratio {ratio} +\d+\.\d\d +\(target >= ", out, re.MULTILINE), out
