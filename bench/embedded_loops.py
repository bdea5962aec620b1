"""The embedded default on each event loop, side by side: idle memory, and requests per
server CPU second on two light endpoints.

``config.default.yaml`` runs on asyncio's own loop for its memory; uvloop is the service's
default elsewhere for its speed. This measures what that choice trades, in one run: each
round starts ``authgate serve`` on the embedded default (a fresh folder, as
``bench/startup_bench.py`` does) on asyncio and then on uvloop, reads its VmRSS after
``--settle`` seconds idle, then drives ``/health/liveness`` (the REST layer alone) and
``/health/readiness`` (a SQLite round trip) over 16 keep-alive connections for ``--seconds``
each. The server is pinned to CPU 0 and the load to CPU 1; per CPU second counts the
server's own CPU time (user + system).

    .venv/bin/python bench/embedded_loops.py               # the recorded run (3 rounds)
    .venv/bin/python bench/embedded_loops.py --quick       # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import ServiceProcess, authgate_command, free_port
from bench.httpload import closed_loop, request_bytes
from bench.load import pinned_to
from bench.startup_bench import new_folder

LOOPS = ("asyncio", "uvloop")
PATHS = ("/health/liveness", "/health/readiness")


async def one_round(loop: str, settle: float, seconds: float) -> dict[str, float]:
    folder = new_folder(loop)
    port = free_port()
    config = folder / "config.default.yaml"
    env = {"PORT": str(port), "METRICS_PORT": str(free_port())}
    command = authgate_command("serve", "--config", str(config))
    service = ServiceProcess(config, port=port, env=env, cwd=folder, command=command, taskset_cpu=0)
    try:
        async with service:
            await asyncio.sleep(settle)
            figures = {"idle_rss_mib": service.rss_kib() / 1024}
            for path in PATHS:
                request = request_bytes(path, port)
                await closed_loop(port, request, connections=16, seconds=min(0.5, seconds))
                before = service.cpu_seconds()
                result = await closed_loop(port, request, connections=16, seconds=seconds)
                used = service.cpu_seconds() - before
                if result.errors:
                    raise RuntimeError(f"{loop} {path}: {result.first_error}")
                figures[f"{path} per CPU second"] = result.count / used
            return figures
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def run(rounds: int, settle: float, seconds: float) -> dict[str, Any]:
    samples: dict[str, list[dict[str, float]]] = {loop: [] for loop in LOOPS}
    with pinned_to(1):
        for _ in range(rounds):
            for loop in LOOPS:
                samples[loop].append(await one_round(loop, settle, seconds))
    medians = {
        loop: {key: round(statistics.median(s[key] for s in runs), 2) for key in runs[0]}
        for loop, runs in samples.items()
    }
    ratios = {
        key: round(medians["uvloop"][key] / medians["asyncio"][key], 3)
        for key in medians["asyncio"]
    }
    return {
        "rounds": rounds,
        "seconds": seconds,
        "median": medians,
        "uvloop / asyncio": ratios,
        "samples": samples,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--quick", action="store_true", help="1 round of 0.3 s loads")
    args = parser.parse_args()
    rounds, settle, seconds = args.rounds, args.settle, args.seconds
    if args.quick:
        rounds, settle, seconds = 1, 1.0, 0.3
    print(json.dumps(asyncio.run(run(rounds, settle, seconds)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
