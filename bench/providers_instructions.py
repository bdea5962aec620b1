"""Instructions per ``GET /v1/account/providers``: authgate vs the raw handler, under callgrind.

The throughput benchmark (bench/providers_bench.py) needs a quiet machine: on a busy one the
servers share their core with other work and the ratios move by ±20 %. The number of
instructions a server executes per request does not depend on what else runs, so this
measures it: each server runs under valgrind's callgrind with instrumentation off while it
starts, then counts exactly the requests of the measured batch (``callgrind_control``
switches instrumentation on, zeroes and dumps the counters around it).

It counts the server process's own user-space instructions: not the kernel's work for the
sockets (the same for every server here), not PostgreSQL's, and not what a CPU does per
instruction (cryptography, whose instructions valgrind's emulated CPU changes, counts more
than it costs natively). So "authgate / raw" here is a lower bound of the throughput ratio:
the common kernel and database work weigh on both.

    .venv/bin/python bench/providers_instructions.py                # 1,000 requests each
    .venv/bin/python bench/providers_instructions.py --requests 200 authgate raw
    .venv/bin/python bench/providers_instructions.py --quick        # 200 requests, 3 servers

The raw handler runs twice (bench/raw_pool.py): ``raw`` on authgate's own pool, the fair floor,
and ``raw-asyncpg`` on asyncpg's pool; the report gives every authgate server's ratio to each
("authgate/raw", "authgate/raw-asyncpg": raw's instructions per request over authgate's).

Needs valgrind (``apt-get install valgrind``) and the PostgreSQL of bench/providers_bench.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from authgate.adapters.jose.keys import load_or_create_keys
from authgate.entrypoints.rest.eventloop import default_event_loop
from bench.callgrind import VALGRIND, instructions_per_request
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
from bench.load import DEFAULT_ADMIN_URL
from bench.providers_bench import PATH, seed
from bench.raw_pool import BASELINES as RAW_POOLS

# name -> overrides of the configuration (None: the raw handler)
SERVERS: dict[str, dict[str, Any] | None] = {
    "authgate": {},
    "authgate-nolog": {"rest": {"access_log": False}},
    "authgate-nometrics": {"metrics": {"enabled": False}},
    "raw": None,  # the raw handler on authgate's pool
    "raw-asyncpg": None,  # the raw handler on asyncpg's pool
}
QUICK = ["authgate", "raw", "raw-asyncpg"]


async def count(
    folder: Path, kind: str, command: list[str], request: bytes, port: int, requests: int
) -> dict[str, Any]:
    out = folder / f"{kind}.callgrind"
    server = ServiceProcess(
        folder / "config.yaml",
        port=port,
        command=[*VALGRIND, f"--callgrind-out-file={out}.%p", *command],
        start_timeout=900,
        stop_timeout=120,
    )
    async with server:
        # warm up uninstrumented: pools, caches, the first statement's preparation
        await closed_loop(port, request, connections=4, seconds=120, max_requests=100)
        return await instructions_per_request(kind, server.pid, out, port, request, requests)


async def run(admin_url: str, kinds: list[str], requests: int) -> dict[str, Any]:
    folder = temp_folder("authgate-bench-instructions-")
    name = f"authgate_bench_ir_{os.getpid()}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    counts: dict[str, Any] = {}
    try:
        base = write_config(folder, service_config(folder, None, database_url=url))
        await asyncio.to_thread(migrate, base)
        account = await seed(url)
        load_or_create_keys(folder / "session-keys.json", create=True)
        token = await mint_session(folder / "session-keys.json", account, database_url=url)
        for kind in kinds:
            port = free_port()
            overrides = SERVERS[kind]
            if overrides is None:
                raw = Path(__file__).with_name("raw_providers_server.py")
                command = [
                    *(sys.executable, str(raw), str(port), url, account),
                    *(default_event_loop(), RAW_POOLS[kind]),
                ]
                request = request_bytes(PATH, port)
            else:
                config = service_config(
                    folder,
                    None,
                    database_url=url,
                    overrides={**overrides, "rest": {**overrides.get("rest", {}), "port": port}},
                )
                command = authgate_command(
                    "serve", "--config", str(write_config(folder, config, f"{kind}.yaml"))
                )
                request = request_bytes(PATH, port, {"Authorization": f"Bearer {token}"})
            counts[kind] = await count(folder, kind, command, request, port, requests)
            print(kind, counts[kind], file=sys.stderr, flush=True)
    finally:
        admin = await asyncpg.connect(admin_url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
        shutil.rmtree(folder, ignore_errors=True)
    report: dict[str, Any] = {"requests": requests, "servers": counts}
    for baseline in RAW_POOLS:
        if baseline in counts:
            raw = counts[baseline]["instructions_per_request"]
            for kind in counts:
                if kind not in RAW_POOLS:
                    ratio = raw / counts[kind]["instructions_per_request"]
                    report[f"{kind}/{baseline}"] = round(ratio, 3)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("servers", nargs="*", help=f"any of {', '.join(SERVERS)} (default: all)")
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument(
        "--quick", action="store_true", help=f"200 requests; servers {', '.join(QUICK)}"
    )
    args = parser.parse_args()
    if args.quick:
        args.requests = 200
        args.servers = args.servers or QUICK
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    unknown = set(args.servers) - set(SERVERS)
    if unknown:
        parser.error(f"unknown server(s): {', '.join(sorted(unknown))}")
    report = asyncio.run(run(args.admin_url, args.servers or list(SERVERS), args.requests))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
