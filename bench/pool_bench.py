"""The account read on authgate's own PostgreSQL pool vs on asyncpg's pool, by CPU per request.

Two ``authgate serve`` on one PostgreSQL database (one account, two linked providers), the same
configuration, the one difference the pool of the PostgreSQL adapters:

    own        authgate's own pool (src/adapters/postgres/pool.py)
    asyncpg    ``asyncpg.create_pool`` with the same sizes and timeouts and a reset that sends
               nothing (asyncpg still rolls back a transaction left open)

Each round drives ``GET /v1/account/providers`` on one, then the other (the order alternates
by round), the server pinned to CPU 0 and this load generator to CPU 1, and counts the CPU
seconds (user + system, /proc) the server process and the database's PostgreSQL backends
(the idle server's among them, which do nothing meanwhile) used per answered request. A busy
machine moves throughput, far less the CPU a request costs. The report gives each variant's
medians and the per-round ratio asyncpg / own of the total (server + backends) and of the
server alone: above 1, our pool is cheaper by that much. ``--callgrind N`` adds the server's
instructions per request under valgrind (bench/callgrind.py), which do not depend on the
machine's load at all (the backends' work is the same statements on both).

    .venv/bin/python bench/pool_bench.py                  # 10 rounds of 4 s (~1.5 minutes)
    .venv/bin/python bench/pool_bench.py --callgrind 2000 # and instruction counts (~2 minutes)
    .venv/bin/python bench/pool_bench.py --quick          # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
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
    authgate_command,
    free_port,
    migrate,
    mint_session,
    service_config,
    temp_folder,
    write_config,
)
from bench.httpload import closed_loop, request_bytes
from bench.load import DEFAULT_ADMIN_URL, backend_cpu, backend_cpu_between, pinned_to
from bench.providers_bench import PATH, same_answers, seed
from bench.providers_instructions import count
from bench.serve_on_asyncpg_pool import OPENED

VARIANTS = ("own", "asyncpg")
ASYNCPG_SERVE = Path(__file__).with_name("serve_on_asyncpg_pool.py")


def command(kind: str, config_file: Path) -> list[str]:
    """``authgate serve`` on the variant's pool."""
    if kind == "asyncpg":
        return [sys.executable, str(ASYNCPG_SERVE), "serve", "--config", str(config_file)]
    return authgate_command("serve", "--config", str(config_file))


async def measure(
    server: ServiceProcess, url: str, request: bytes, seconds: float, connections: int
) -> dict[str, float]:
    """One round on ``server``: its CPU and its backends' per answered request (µs)."""
    backends = await backend_cpu(url)
    own = server.cpu_seconds()
    result = await closed_loop(server.port, request, connections=connections, seconds=seconds)
    own = server.cpu_seconds() - own
    backends_used = backend_cpu_between(backends, await backend_cpu(url))
    if result.errors:
        raise RuntimeError(f"{result.errors} errors, first: {result.first_error}")
    answered = max(result.count, 1)
    return {
        "per_second": result.per_second,
        "server_us": own / answered * 1e6,
        "backends_us": backends_used / answered * 1e6,
        "total_us": (own + backends_used) / answered * 1e6,
    }


def spread(values: list[float]) -> dict[str, Any]:
    """The median of per-round ratios, their quartiles and extremes."""
    q1, median, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return {
        "median": round(median, 3),
        "quartiles": [round(q1, 3), round(q3, 3)],
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


async def run(
    admin_url: str,
    rounds: int,
    seconds: float,
    connections: int,
    warmup: float,
    callgrind_requests: int,
) -> dict[str, Any]:
    folder = temp_folder("authgate-bench-pool-")
    name = f"authgate_bench_pool_{os.getpid()}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    samples: dict[str, list[dict[str, float]]] = {kind: [] for kind in VARIANTS}
    instructions: dict[str, Any] = {}
    try:
        config_file = write_config(folder, service_config(folder, None, database_url=url))
        await asyncio.to_thread(migrate, config_file)
        account = await seed(url)
        servers = {}
        for kind in VARIANTS:
            config = write_config(
                folder, service_config(folder, None, database_url=url), f"{kind}.yaml"
            )
            servers[kind] = ServiceProcess(config, taskset_cpu=0, command=command(kind, config))
        async with servers["own"], servers["asyncpg"]:
            if OPENED not in servers["asyncpg"].log():
                raise RuntimeError("the asyncpg variant did not open asyncpg's pool")
            token = await mint_session(folder / "session-keys.json", account, database_url=url)
            bearer = {"Authorization": f"Bearer {token}"}
            requests = {kind: request_bytes(PATH, s.port, bearer) for kind, s in servers.items()}
            await same_answers(servers, {kind: bearer for kind in servers})
            for kind, server in servers.items():  # warm up: pools grown, caches full
                await measure(server, url, requests[kind], warmup, connections)
            for r in range(rounds):
                order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
                for kind in order:
                    samples[kind].append(
                        await measure(servers[kind], url, requests[kind], seconds, connections)
                    )
        for kind in VARIANTS if callgrind_requests else ():
            port = free_port()
            config = write_config(
                folder,
                service_config(folder, None, port=port, database_url=url),
                f"{kind}-callgrind.yaml",
            )
            instructions[kind] = await count(
                folder,
                kind,
                command(kind, config),
                request_bytes(PATH, port, bearer),
                port,
                callgrind_requests,
            )
    finally:
        admin = await asyncpg.connect(admin_url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
        shutil.rmtree(folder, ignore_errors=True)

    def median(kind: str, key: str) -> float:
        return round(statistics.median(s[key] for s in samples[kind]), 1)

    def ratios(key: str) -> list[float]:
        return [a[key] / o[key] for a, o in zip(samples["asyncpg"], samples["own"], strict=True)]

    report: dict[str, Any] = {
        "rounds": rounds,
        "seconds_per_round": seconds,
        "connections": connections,
        "variants": {
            kind: {key: median(kind, key) for key in samples[kind][0]} for kind in VARIANTS
        },
        "asyncpg/own total CPU per request": spread(ratios("total_us")),
        "asyncpg/own server CPU per request": spread(ratios("server_us")),
        "round_ratios_total": [round(x, 3) for x in ratios("total_us")],
    }
    if instructions:
        report["instructions"] = instructions
        report["asyncpg/own instructions per request"] = round(
            instructions["asyncpg"]["instructions_per_request"]
            / instructions["own"]["instructions_per_request"],
            3,
        )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--callgrind",
        type=int,
        default=0,
        metavar="N",
        help="also count the server's instructions over N requests per variant (valgrind)",
    )
    parser.add_argument("--quick", action="store_true", help="2 rounds of 1 s")
    args = parser.parse_args()
    if args.callgrind and shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    rounds, seconds, warmup = (2, 1.0, 0.5) if args.quick else (args.rounds, args.seconds, 2.0)
    started = time.monotonic()
    with pinned_to(1):
        report = asyncio.run(
            run(args.admin_url, rounds, seconds, args.connections, warmup, args.callgrind)
        )
    report["wall_seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
