"""What a log record costs the service, with its log listener woken for every record and with
it lingering (``rest/accesslog.py``'s ``LingeringListener``), side by side in one run.

An event loop does a request's worth of work (``--work-us`` of CPU) and logs one record per
request, as the access log does, through the service's handler writing to ``/dev/null``; the
loop and the listener's thread share one CPU, as a server pinned to one does. Reported per
request: the process's CPU time (both threads), and the context switches. The loop alone, with
no record, is measured too: "per record" is the difference.

    .venv/bin/python bench/log_listener_bench.py                 # 20,000 requests per round
    .venv/bin/python bench/log_listener_bench.py --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from authgate.entrypoints.rest.accesslog import LINGER_SECONDS, ServiceLogHandler
from bench.load import pinned_to

LINE = "127.0.0.1 GET /v1/account/providers 200 1.4ms"


def busy(microseconds: float) -> None:
    end = time.perf_counter() + microseconds / 1e6
    while time.perf_counter() < end:
        pass


async def requests(count: int, work_us: float, logger: logging.Logger | None) -> None:
    for n in range(count):
        busy(work_us)
        if logger is not None:
            logger.info(LINE)
        if n % 4 == 0:  # the loop turns, as between a server's requests
            await asyncio.sleep(0)


def measure(count: int, work_us: float, linger: float | None) -> dict[str, float]:
    """Per request: CPU microseconds and context switches (``linger`` None: no record)."""
    logger = None
    handler = None
    devnull = open(os.devnull, "w")  # noqa: SIM115 - closed below
    if linger is not None:
        handler = ServiceLogHandler(devnull, linger=linger)
        logger = logging.getLogger(f"bench.log.{linger}")
        logger.propagate = False
        logger.setLevel(logging.INFO)
        logger.addHandler(handler)
    before = resource.getrusage(resource.RUSAGE_SELF)
    began = time.process_time()
    asyncio.run(requests(count, work_us, logger))
    if handler is not None:
        handler.close()  # every record written: its cost counted
    cpu = time.process_time() - began
    after = resource.getrusage(resource.RUSAGE_SELF)
    devnull.close()
    switches = (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw)
    return {"cpu_us": cpu / count * 1e6, "switches": switches / count}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--work-us", type=float, default=100.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.logThreads = False  # as install_service_handler sets them
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None  # as install_service_handler: no caller lookup per record
    modes: dict[str, float | None] = {
        "no record": None,
        "a wake-up per record (linger 0)": 0.0,
        f"lingering ({LINGER_SECONDS} s)": LINGER_SECONDS,
    }
    found: dict[str, list[dict[str, float]]] = {name: [] for name in modes}
    with pinned_to(0):
        for _ in range(args.rounds):  # alternating, so that drift hits every mode alike
            for name, linger in modes.items():
                found[name].append(measure(args.requests, args.work_us, linger))
    report: dict[str, Any] = {}
    base = statistics.median(r["cpu_us"] for r in found["no record"])
    for name, rounds in found.items():
        cpu = statistics.median(r["cpu_us"] for r in rounds)
        report[name] = {
            "cpu_us_per_request": round(cpu, 2),
            "cpu_us_per_record": round(cpu - base, 2),
            "context_switches_per_request": round(
                statistics.median(r["switches"] for r in rounds), 3
            ),
        }
    per_record = [v["cpu_us_per_record"] for k, v in report.items() if k != "no record"]
    report["lingering / woken per record, CPU per record"] = (
        round(per_record[1] / per_record[0], 3) if per_record[0] else None
    )
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
