"""``GET /v1/account/providers`` of authgate vs a raw aiohttp + asyncpg handler.

Side by side in one run, on one PostgreSQL database holding one account with two linked
providers:

    authgate   ``authgate serve`` as configured by default but tracing: bearer JWT
               verification (ES256, then its cache of verified tokens), the live-session check
               (revocation; its cache), scope check, the PostgreSQL adapter's
               ``list_identities``, attrs/cattrs response, metrics, access log
    authgate-nolog   the same with ``rest.access_log: false``
    raw        bench/raw_providers_server.py: the same query on authgate's own pool of the same
               size (bench/raw_pool.py) and the same JSON, with no authentication, validation,
               error handling or access log: the fair floor
    raw-asyncpg  the same handler on asyncpg's pool (no reset query at release), as a
               hand-written aiohttp + asyncpg service would run it

Each authgate server's ratio is given to both raw servers ("authgate/raw",
"authgate/raw-asyncpg"). All four run on the same event loop, ``rest.event_loop``'s default
(uvloop when installed).
Each server runs alone pinned to CPU 0 while the load generator (bench/httpload.py: keep-alive
connections, closed loop) runs pinned to CPU 1; PostgreSQL serves both the same way. Rounds
alternate the order; the median round is reported with p50/p99 latency and the server's CPU
share (a server well under 100 % of its core was not the bottleneck), and the server's CPU
time per request (``cpu_us``; "by CPU" compares those, which a busy machine skews less than
throughput). Before measuring, the four must answer the read with the same bytes. Target:
authgate/raw >= 0.8 with the access log on (the default).

    .venv/bin/python bench/providers_bench.py            # the recorded run (~1 minute)
    .venv/bin/python bench/providers_bench.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import asyncpg

from authgate.entrypoints.rest.eventloop import default_event_loop
from bench import profiling
from bench.harness import (
    ServiceProcess,
    free_port,
    migrate,
    mint_session,
    service_config,
    temp_folder,
    write_config,
)
from bench.httpload import LoadResult, closed_loop, request_bytes
from bench.load import DEFAULT_ADMIN_URL, pinned_to
from bench.raw_pool import BASELINES as RAW_POOLS

TARGET = 0.8
PATH = "/v1/account/providers"


async def seed(url: str) -> str:
    """One account with two linked providers; returns its id."""
    account = uuid.uuid4()
    now = dt.datetime.now(dt.UTC)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "INSERT INTO accounts (id, email, name, created_at) VALUES ($1, $2, $3, $4)",
            account,
            "bench@example.com",
            "Bench",
            now,
        )
        for provider, subject, primary in (("google", "g-1", True), ("facebook", "f-1", False)):
            await conn.execute(
                "INSERT INTO identities (provider, subject, account_id, email, linked_at, "
                "is_primary) VALUES ($1, $2, $3, $4, $5, $6)",
                provider,
                subject,
                account,
                "bench@example.com",
                now,
                primary,
            )
    finally:
        await conn.close()
    return str(account)


async def same_answers(
    servers: dict[str, ServiceProcess], headers: dict[str, dict[str, str]]
) -> None:
    """Every server answers the read with the same status, content type and body bytes (the
    raw handler must do the same work to be a fair baseline); raises otherwise."""
    answers = {}
    async with aiohttp.ClientSession() as client:
        for kind, server in servers.items():
            async with client.get(server.url + PATH, headers=headers[kind]) as response:
                answers[kind] = (response.status, response.content_type, await response.read())
    first = next(iter(answers.values()))
    if first[0] != 200 or any(answer != first for answer in answers.values()):
        raise RuntimeError(f"the servers answer differently: {answers}")


async def measure(
    server: ServiceProcess, request: bytes, seconds: float, connections: int
) -> dict[str, Any]:
    cpu = server.cpu_seconds()
    result: LoadResult = await closed_loop(
        server.port, request, connections=connections, seconds=seconds
    )
    cpu = server.cpu_seconds() - cpu
    if result.errors:
        raise RuntimeError(f"{result.errors} errors, first: {result.first_error}")
    return {
        "per_second": result.per_second,
        "p50_ms": result.percentile(50) * 1000,
        "p99_ms": result.percentile(99) * 1000,
        "server_cpu": cpu / result.seconds,
        # server CPU per answered request: what the server's code costs, even on a machine so
        # busy that the server was not the bottleneck
        "cpu_us": cpu / max(result.count, 1) * 1e6,
    }


async def run(
    admin_url: str,
    rounds: int,
    seconds: float,
    connections: int,
    warmup: float,
    profile: bool = False,
    profile_out: Path | None = None,
) -> dict[str, Any]:
    profile_report: dict[str, Any] | None = None
    # the raw handler runs on authgate's loop: rest.event_loop's default (uvloop when installed)
    loop = default_event_loop()
    folder = temp_folder("authgate-bench-providers-")
    name = f"authgate_bench_{os.getpid()}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        config_file = write_config(folder, service_config(folder, None, database_url=url))
        await asyncio.to_thread(migrate, config_file)
        account = await seed(url)
        authgate = ServiceProcess(config_file, taskset_cpu=0)
        quiet_file = write_config(
            folder,
            service_config(
                folder, None, database_url=url, overrides={"rest": {"access_log": False}}
            ),
            "quiet.yaml",
        )
        quiet = ServiceProcess(quiet_file, taskset_cpu=0)
        raws = {
            baseline: ServiceProcess(
                config_file,
                taskset_cpu=0,
                port=raw_port,
                command=[
                    *(sys.executable, str(Path(__file__).with_name("raw_providers_server.py"))),
                    *(str(raw_port), url, account, loop, pool),
                ],
            )
            for baseline, pool in RAW_POOLS.items()
            for raw_port in [free_port()]
        }
        samples: dict[str, list[dict[str, Any]]] = {
            kind: [] for kind in ("authgate", "authgate-nolog", *RAW_POOLS)
        }
        async with authgate, quiet, raws["raw"], raws["raw-asyncpg"]:
            token = await mint_session(folder / "session-keys.json", account, database_url=url)
            bearer = {"Authorization": f"Bearer {token}"}
            servers = {"authgate": authgate, "authgate-nolog": quiet, **raws}
            requests = {
                kind: request_bytes(PATH, server.port, {} if kind in RAW_POOLS else bearer)
                for kind, server in servers.items()
            }
            await same_answers(
                servers, {kind: {} if kind in RAW_POOLS else bearer for kind in servers}
            )
            for kind in servers:  # warm both up (pools, caches)
                await measure(servers[kind], requests[kind], warmup, connections)
            for r in range(rounds):
                order = tuple(servers) if r % 2 == 0 else tuple(reversed(servers))
                for kind in order:
                    samples[kind].append(
                        await measure(servers[kind], requests[kind], seconds, connections)
                    )
            if profile:  # an extra round of authgate under py-spy (it slows the server down)
                folded = folder / "authgate.folded"
                spy = profiling.record(authgate.pid, 8, folded)
                await closed_loop(
                    authgate.port, requests["authgate"], connections=connections, seconds=9
                )
                await asyncio.to_thread(spy.wait)
                if profile_out is not None:
                    shutil.copyfile(folded, profile_out)
                profile_report = {
                    "shares": profiling.shares(folded),
                    "top_self": profiling.top_functions(folded),
                }
    finally:
        admin = await asyncpg.connect(admin_url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()

    def median(kind: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[kind])

    report: dict[str, Any] = {
        "rounds": rounds,
        "seconds_per_round": seconds,
        "connections": connections,
        "event_loop": loop,
        "servers": {
            kind: {
                key: round(median(kind, key), 2)
                for key in ("per_second", "p50_ms", "p99_ms", "server_cpu", "cpu_us")
            }
            for kind in samples
        },
        "round_ratios": [
            round(a["per_second"] / b["per_second"], 3)
            for a, b in zip(samples["authgate"], samples["raw"], strict=True)
        ],
    }
    ratio = median("authgate", "per_second") / median("raw", "per_second")
    for baseline in RAW_POOLS:
        for kind in ("authgate", "authgate-nolog"):
            report[f"{kind}/{baseline}"] = round(
                median(kind, "per_second") / median(baseline, "per_second"), 3
            )
    # The same comparison by the server's CPU per request (raw's / authgate's): the ratio the
    # throughputs would have if each server had its core to itself.
    for baseline in RAW_POOLS:
        for kind in ("authgate", "authgate-nolog"):
            report[f"{kind}/{baseline} by CPU"] = round(
                median(baseline, "cpu_us") / median(kind, "cpu_us"), 3
            )
    report["target"] = TARGET
    report["met"] = ratio >= TARGET
    if profile_report is not None:
        report["authgate_profile"] = profile_report
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 1 s")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile authgate with py-spy (in the dev lock: scripts/bootstrap dev)",
    )
    parser.add_argument(
        "--profile-out", type=Path, help="with --profile: keep the folded stacks in this file"
    )
    args = parser.parse_args()
    rounds, seconds, warmup = (2, 1.0, 0.5) if args.quick else (args.rounds, args.seconds, 2.0)
    started = time.monotonic()
    with pinned_to(1):
        report = asyncio.run(
            run(
                args.admin_url,
                rounds,
                seconds,
                args.connections,
                warmup,
                args.profile or args.profile_out is not None,
                args.profile_out,
            )
        )
    report["wall_seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
