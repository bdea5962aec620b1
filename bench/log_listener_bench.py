"""What a log record costs the service: through the standard library's own pair (a
``QueueHandler``, a ``QueueListener`` woken for every record, a ``StreamHandler`` writing and
flushing each line), through the service's handler woken for every record (``linger`` 0), and
through the service's handler as it runs (``rest/accesslog.py``: the ``LingeringListener``
lets records gather for 50 ms once woken, and its ``BurstWriter`` writes a burst's lines in
one write), side by side in one run.

An event loop does a request's worth of work (``--work-us`` of CPU) and logs one record per
request, as the access log does, through the handler under test, which writes to a file (as
a service's stderr is a file or a pipe; ``--to devnull`` writes to ``/dev/null``, where a
write costs almost nothing); the loop and the listener's thread share one CPU, as a server
pinned to one does. Reported per request: the process's CPU time (both threads), and the
context switches. The loop alone, with no record, is measured too: "per record" is the
difference, and "service / standard library" is the ratio of the two per-record figures.

    .venv/bin/python bench/log_listener_bench.py                 # 20,000 requests per round
    .venv/bin/python bench/log_listener_bench.py --rounds 5
    .venv/bin/python bench/log_listener_bench.py --to devnull
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import logging.handlers
import os
import queue
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from authgate.entrypoints.rest.accesslog import LINGER_SECONDS, LOG_FORMAT, ServiceLogHandler
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


STANDARD_LIBRARY = "standard library (QueueHandler + QueueListener + StreamHandler)"
WOKEN = "service's handler, woken per record (linger 0)"
SERVICE = f"service's handler ({LINGER_SECONDS} s linger, lines written per burst)"


class StandardPair(logging.handlers.QueueHandler):
    """The logging module's own pair, as its documentation sets it up: records queued, a
    listener's thread handing each to a plain StreamHandler."""

    def __init__(self, stream: Any) -> None:
        writer = logging.StreamHandler(stream)
        writer.setFormatter(logging.Formatter(LOG_FORMAT))
        records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        super().__init__(records)
        self.listener = logging.handlers.QueueListener(records, writer, respect_handler_level=True)
        self.listener.start()

    def close(self) -> None:
        if self.listener._thread is not None:  # logging.shutdown closes it again at exit
            self.listener.stop()
        super().close()


def handler_of(mode: str, stream: Any) -> logging.Handler:
    if mode == STANDARD_LIBRARY:
        return StandardPair(stream)
    return ServiceLogHandler(stream, linger=0.0 if mode == WOKEN else LINGER_SECONDS)


def measure(count: int, work_us: float, mode: str | None, path: str) -> dict[str, float]:
    """Per request: CPU microseconds and context switches (``mode`` None: no record)."""
    logger = None
    handler = None
    stream = open(path, "w")  # noqa: SIM115 - closed below
    if mode is not None:
        handler = handler_of(mode, stream)
        logger = logging.getLogger(f"bench.log.{mode}")
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
    stream.close()
    switches = (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw)
    return {"cpu_us": cpu / count * 1e6, "switches": switches / count}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--work-us", type=float, default=100.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--to", choices=("file", "devnull"), default="file")
    args = parser.parse_args()
    logging.logThreads = False  # as install_service_handler sets them
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None  # as install_service_handler: no caller lookup per record
    modes: dict[str, str | None] = {
        "no record": None,
        STANDARD_LIBRARY: STANDARD_LIBRARY,
        WOKEN: WOKEN,
        SERVICE: SERVICE,
    }
    found: dict[str, list[dict[str, float]]] = {name: [] for name in modes}
    with tempfile.TemporaryDirectory() as folder:
        path = os.devnull if args.to == "devnull" else os.path.join(folder, "service.log")
        with pinned_to(0):
            for _ in range(args.rounds):  # alternating, so that drift hits every mode alike
                for name, mode in modes.items():
                    found[name].append(measure(args.requests, args.work_us, mode, path))
    report: dict[str, Any] = {"written_to": args.to}
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
    standard = report[STANDARD_LIBRARY]["cpu_us_per_record"]
    report["service / standard library, CPU per record"] = (
        round(report[SERVICE]["cpu_us_per_record"] / standard, 3) if standard > 0 else None
    )
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
