"""Start-up time and idle resident memory of ``authgate serve`` on the embedded default
(issue 5, bench 3; issue 13, goal 4: ready within 1 s, idle VmRSS at most 60 MiB).

The embedded default is ``config.default.yaml`` as ``scripts/run`` serves it: SQLite in
./var, the development identity provider, tracing and metrics on. Each run starts in a fresh
empty folder (so the first start creates the SQLite file, the session key and the Apple dev
key, as on a new machine) and again in the same folder (a warm restart). Start-up is the time
from ``exec`` to the first 200 of ``/health/liveness`` and of ``/health/readiness``; idle
memory is VmRSS after the process has been idle for ``--settle`` seconds, then again after 100
requests of each built-in endpoint.

``ready_cpu_seconds`` is the CPU time (user + system) the service had used when it first
answered readiness: unlike the wall time it does not grow when other processes share the
machine. ``idle_rss_mib`` is ``idle_rss_kib`` / 1024 (VmRSS is in KiB).

Python's bytecode cache is written as a normal run writes it (``PYTHONDONTWRITEBYTECODE`` is
cleared for the service), and one uncounted start comes first: the counted starts measure an
installed service, not the compilation of every module of a fresh virtual environment
(``first_start`` reports that start, which compiles whatever was not compiled yet).

    .venv/bin/python bench/startup_bench.py            # the recorded run (5 fresh + 5 warm)
    .venv/bin/python bench/startup_bench.py --uvloop   # the same on uvloop's event loop
    .venv/bin/python bench/startup_bench.py --quick    # a smoke run (1 fresh + 1 warm)
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

from bench.harness import ROOT, ServiceProcess, authgate_command, free_port, temp_folder

# ``authgate serve`` with uvloop's event loop policy set first: aiohttp's run_app then runs on
# a uvloop loop (what a ``rest.event_loop: uvloop`` setting does), to measure what it costs.
UVLOOP_SERVE = (
    "import asyncio, sys, uvloop; asyncio.set_event_loop_policy(uvloop.EventLoopPolicy()); "
    "from authgate.entrypoints.cli import main; sys.exit(main())"
)


async def one_start(folder: Path, settle: float, uvloop: bool = False) -> dict[str, Any]:
    port = free_port()
    config = folder / "config.default.yaml"
    args = ("serve", "--config", str(config))
    command = [sys.executable, "-c", UVLOOP_SERVE, *args] if uvloop else authgate_command(*args)
    # An empty PYTHONDONTWRITEBYTECODE is unset: the service caches its bytecode as usual.
    env = {"PORT": str(port), "PYTHONDONTWRITEBYTECODE": ""}
    service = ServiceProcess(config, port=port, env=env, cwd=folder, command=command)
    async with service, aiohttp.ClientSession() as http:
        live = service.startup_seconds
        assert live is not None
        began = time.perf_counter() - live
        while True:
            async with http.get(f"{service.url}/health/readiness") as response:
                if response.status == 200:
                    ready = time.perf_counter() - began
                    ready_cpu = service.cpu_seconds()
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
        "ready_cpu_seconds": ready_cpu,
        "idle_rss_kib": idle,
        "idle_rss_mib": idle / 1024,
        "rss_after_requests_kib": used,
    }


def new_folder() -> Path:
    folder = temp_folder("authgate-startup-")
    shutil.copy(ROOT / "config.default.yaml", folder / "config.default.yaml")
    return folder


KEYS = (
    "live_seconds",
    "ready_seconds",
    "ready_cpu_seconds",
    "idle_rss_kib",
    "idle_rss_mib",
    "rss_after_requests_kib",
)


async def run(starts: int, settle: float, uvloop: bool = False) -> dict[str, Any]:
    results: dict[str, list[dict[str, Any]]] = {"fresh": [], "warm": []}
    folder = new_folder()
    try:
        first = await one_start(folder, settle, uvloop)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for _ in range(starts):
        folder = new_folder()
        try:
            results["fresh"].append(await one_start(folder, settle, uvloop))
            results["warm"].append(await one_start(folder, settle, uvloop))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    report: dict[str, Any] = {
        "starts": starts,
        "settle_seconds": settle,
        "event_loop": "uvloop" if uvloop else "default",
        "targets": {"ready_seconds": 1.0, "idle_rss_mib": 60.0},  # issue 13, goal 4
        "first_start": {key: round(value, 3) for key, value in first.items()},
    }
    for kind, runs in results.items():
        report[kind] = {key: round(statistics.median(r[key] for r in runs), 3) for key in KEYS}
        report[kind]["live_seconds_max"] = round(max(r["live_seconds"] for r in runs), 3)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--uvloop", action="store_true", help="serve on uvloop's event loop")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 start, 0.2 s idle")
    args = parser.parse_args()
    starts, settle = (1, 0.2) if args.quick else (args.starts, args.settle)
    print(json.dumps(asyncio.run(run(starts, settle, args.uvloop)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
