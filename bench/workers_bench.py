"""``authgate serve`` with 1 worker vs 2 workers (``--workers``, SO_REUSEPORT) on this machine.

One PostgreSQL database holding one account with two linked providers, one Redis (rate limits,
revocations), the same configuration for both; only ``rest.workers`` differs. Two reads are
driven by bench/httpload.py (keep-alive connections, closed loop, one asyncio process):

    health     ``GET /health/liveness``: the HTTP layer alone
    account    ``GET /v1/account/providers`` with a bearer session: JWT verification (then its
               cache), the live-session check, the PostgreSQL read, the JSON answer, access log

Reported per case (median round; rounds alternate the order): requests per second, the
service's CPU time per answered request (``cpu_us``: the parent and its workers together),
the service's CPU in cores (``server_cores``) and the load generator's own (``load_cores``).

Read it honestly: nothing is pinned, and the load generator, PostgreSQL and Redis share the
same cores with the workers. A second worker can only add what the first one left of the
machine: on 2 cores, with the load generator needing most of one, the gain is bounded well
below 2x; on a machine with cores to spare (the load coming from elsewhere) it is not.

    .venv/bin/python bench/workers_bench.py            # the recorded run (~1.5 minutes)
    .venv/bin/python bench/workers_bench.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench.harness import (
    ServiceProcess,
    free_port_run,
    migrate,
    mint_session,
    service_config,
    temp_folder,
    write_config,
)
from bench.httpload import closed_loop, request_bytes
from bench.load import DEFAULT_ADMIN_URL
from bench.providers_bench import seed

READS = {"health": "/health/liveness", "account": "/v1/account/providers"}


def own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


async def until_serving(service: ServiceProcess, workers: int, within: float = 60.0) -> None:
    """Until every worker serves (the parent logs it); one worker serves when it answers."""
    if workers == 1:
        return
    deadline = time.monotonic() + within
    while f"with {workers} workers" not in service.log():
        if time.monotonic() > deadline or not service.running():
            raise RuntimeError(f"the workers did not all start:\n{service.log()[-3000:]}")
        await asyncio.sleep(0.05)


async def measure(
    service: ServiceProcess, request: bytes, seconds: float, connections: int
) -> dict[str, float]:
    server, own = service.tree_cpu_seconds(), own_cpu_seconds()
    result = await closed_loop(service.port, request, connections=connections, seconds=seconds)
    server = service.tree_cpu_seconds() - server
    own = own_cpu_seconds() - own
    if result.errors:
        raise RuntimeError(f"{result.errors} errors, first: {result.first_error}")
    return {
        "per_second": result.per_second,
        "p50_ms": result.percentile(50) * 1000,
        "p99_ms": result.percentile(99) * 1000,
        "cpu_us": server / max(result.count, 1) * 1e6,
        "server_cores": server / result.seconds,
        "load_cores": own / result.seconds,
    }


async def run(
    admin_url: str, redis_url: str, rounds: int, seconds: float, connections: int, warmup: float
) -> dict[str, Any]:
    folder = temp_folder("authgate-bench-workers-")
    name = f"authgate_bench_workers_{os.getpid()}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    samples: dict[str, list[dict[str, float]]] = {}
    try:
        services: dict[int, ServiceProcess] = {}
        for workers in (1, 2):
            config = service_config(
                folder,
                None,
                database_url=url,
                ratelimit_storage=redis_url,
                keys_file=folder / "session-keys.json",
                overrides={"rest": {"workers": workers}, "metrics": {"port": free_port_run(2)}},
            )
            services[workers] = ServiceProcess(
                write_config(folder, config, f"workers-{workers}.yaml")
            )
        await asyncio.to_thread(migrate, services[1].config_file)
        account = await seed(url)
        async with services[1], services[2]:
            for workers, service in services.items():
                await until_serving(service, workers)
            token = await mint_session(folder / "session-keys.json", account, database_url=url)
            bearer = {"Authorization": f"Bearer {token}"}
            cases = {
                (read, workers): request_bytes(
                    path, service.port, bearer if read == "account" else None
                )
                for read, path in READS.items()
                for workers, service in services.items()
            }
            for (_, workers), request in cases.items():  # pools, caches, the loop's warm-up
                await measure(services[workers], request, warmup, connections)
            for r in range(rounds):
                order = list(cases) if r % 2 == 0 else list(reversed(cases))
                for read, workers in order:
                    figures = await measure(
                        services[workers], cases[read, workers], seconds, connections
                    )
                    samples.setdefault(f"{read}, {workers} worker(s)", []).append(figures)
    finally:
        admin = await asyncpg.connect(admin_url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()

    report: dict[str, Any] = {
        "cores": os.cpu_count(),
        # what else ran: other jobs on the machine take cores from both cases
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "rounds": rounds,
        "seconds_per_round": seconds,
        "connections": connections,
        "note": "load generator, PostgreSQL and Redis share these cores with the workers; "
        "nothing pinned",
        "cases": {
            case: {key: round(statistics.median(s[key] for s in figures), 2) for key in figures[0]}
            for case, figures in samples.items()
        },
    }
    for read in READS:
        one = report["cases"][f"{read}, 1 worker(s)"]
        two = report["cases"][f"{read}, 2 worker(s)"]
        report[f"{read}: 2/1 requests per second"] = round(two["per_second"] / one["per_second"], 3)
    return report


def redis_for_the_run() -> tuple[str, Any]:
    """The Redis on 127.0.0.1:6379 when it answers, else a throwaway one (and its closer)."""
    from tests.support.redis_server import RedisProcess, _answers

    if _answers(6379):
        return "redis://127.0.0.1:6379/0", None
    redis = RedisProcess()
    redis.start()
    return redis.url, redis


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--redis-url", help="default: 127.0.0.1:6379, else a throwaway server")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="1 round of 1 s")
    args = parser.parse_args()
    rounds, seconds, warmup = (1, 1.0, 0.5) if args.quick else (args.rounds, args.seconds, 2.0)
    started = time.monotonic()
    redis = None
    redis_url = args.redis_url
    if redis_url is None:
        redis_url, redis = redis_for_the_run()
    try:
        report = asyncio.run(
            run(args.admin_url, redis_url, rounds, seconds, args.connections, warmup)
        )
    finally:
        if redis is not None:
            redis.close()
    report["wall_seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
