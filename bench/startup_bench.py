"""Start-up time and idle resident memory of ``authgate serve`` on the embedded default
(the targets: ready within 1 s, idle VmRSS at most 64 MiB).

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
    .venv/bin/python bench/startup_bench.py --event-loop uvloop    # on uvloop instead
                                                       # (the default is the configuration's
                                                       # own rest.event_loop: asyncio)
    .venv/bin/python bench/startup_bench.py --quick    # a smoke run (1 fresh + 1 warm)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
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


async def one_start(folder: Path, settle: float) -> dict[str, Any]:
    port = free_port()
    config = folder / "config.default.yaml"
    command = authgate_command("serve", "--config", str(config))
    # An empty PYTHONDONTWRITEBYTECODE is unset: the service caches its bytecode as usual.
    # METRICS_PORT: the default 9464 may be taken by another instance on this machine.
    env = {"PORT": str(port), "METRICS_PORT": str(free_port()), "PYTHONDONTWRITEBYTECODE": ""}
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


def new_folder(event_loop: str | None) -> Path:
    """A fresh folder with the embedded default's configuration; ``event_loop`` replaces its
    ``rest.event_loop`` (None: as the file sets it)."""
    folder = temp_folder("authgate-startup-")
    text = (ROOT / "config.default.yaml").read_text()
    if event_loop is not None:
        setting = re.compile(r"^  event_loop: \w+", re.MULTILINE)
        assert setting.search(text), "config.default.yaml no longer sets rest.event_loop"
        text = setting.sub(f"  event_loop: {event_loop}", text, count=1)
    (folder / "config.default.yaml").write_text(text)
    return folder


KEYS = (
    "live_seconds",
    "ready_seconds",
    "ready_cpu_seconds",
    "idle_rss_kib",
    "idle_rss_mib",
    "rss_after_requests_kib",
)


async def run(starts: int, settle: float, event_loop: str | None = None) -> dict[str, Any]:
    results: dict[str, list[dict[str, Any]]] = {"fresh": [], "warm": []}
    folder = new_folder(event_loop)
    try:
        first = await one_start(folder, settle)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for _ in range(starts):
        folder = new_folder(event_loop)
        try:
            results["fresh"].append(await one_start(folder, settle))
            results["warm"].append(await one_start(folder, settle))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    report: dict[str, Any] = {
        "starts": starts,
        "settle_seconds": settle,
        "event_loop": event_loop or "as config.default.yaml sets it",
        "targets": {"ready_seconds": 1.0, "idle_rss_mib": 64.0},
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
    parser.add_argument(
        "--event-loop",
        choices=("uvloop", "asyncio"),
        help="rest.event_loop (default: config.default.yaml's)",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 start, 0.2 s idle")
    args = parser.parse_args()
    starts, settle = (1, 0.2) if args.quick else (args.starts, args.settle)
    print(json.dumps(asyncio.run(run(starts, settle, args.event_loop)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
