"""Start-up time and idle resident memory of ``authgate serve`` on the embedded default
(issue 5, bench 3).

The embedded default is ``config.default.yaml`` as ``scripts/run`` serves it: SQLite in
./var, the development identity provider, tracing on. Each run starts in a fresh empty
folder (so the first start creates the SQLite file, the session key and the Apple dev key,
as on a new machine) and again in the same folder (a warm restart). Start-up is the time from
``exec`` to the first 200 of ``/health/liveness`` and of ``/health/readiness``; idle memory
is VmRSS after the process has been idle for ``--settle`` seconds, then again after 100
requests of each built-in endpoint.

    .venv/bin/python bench/startup_bench.py          # the recorded run (5 fresh + 5 warm)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench.harness import ROOT, ServiceProcess, free_port, temp_folder


async def one_start(folder: Path, settle: float) -> dict[str, Any]:
    port = free_port()
    config = folder / "config.default.yaml"
    service = ServiceProcess(config, port=port, env={"PORT": str(port)}, cwd=folder)
    async with service, aiohttp.ClientSession() as http:
        live = service.startup_seconds
        assert live is not None
        began = time.perf_counter() - live
        while True:
            async with http.get(f"{service.url}/health/readiness") as response:
                if response.status == 200:
                    ready = time.perf_counter() - began
                    break
            await asyncio.sleep(0.005)
        await asyncio.sleep(settle)
        idle = service.rss_kib()
        for _ in range(100):
            for path in ("/openapi.json", "/health/liveness", "/health/readiness"):
                async with http.get(f"{service.url}{path}") as response:
                    await response.read()
        await asyncio.sleep(1.0)
        used = service.rss_kib()
    return {
        "live_seconds": live,
        "ready_seconds": ready,
        "idle_rss_kib": idle,
        "rss_after_requests_kib": used,
    }


async def run(starts: int, settle: float) -> dict[str, Any]:
    results: dict[str, list[dict[str, Any]]] = {"fresh": [], "warm": []}
    for _ in range(starts):
        folder = temp_folder("authgate-startup-")
        shutil.copy(ROOT / "config.default.yaml", folder / "config.default.yaml")
        try:
            results["fresh"].append(await one_start(folder, settle))
            results["warm"].append(await one_start(folder, settle))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    report: dict[str, Any] = {"starts": starts, "settle_seconds": settle}
    for kind, runs in results.items():
        report[kind] = {
            key: round(statistics.median(r[key] for r in runs), 3)
            for key in ("live_seconds", "ready_seconds", "idle_rss_kib", "rss_after_requests_kib")
        }
        report[kind]["live_seconds_max"] = round(max(r["live_seconds"] for r in runs), 3)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--settle", type=float, default=3.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.starts, args.settle)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
