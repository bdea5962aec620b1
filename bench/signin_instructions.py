"""Instructions per complete sign-in: authgate vs the raw floor, under callgrind.

bench/signin_bench.py measures sign-ins per second of server CPU, but this machine's speed
moves by up to 2.7x within a day and its two cores are shared, so one run against the next
differs by ±15 % and a change worth 3 % cannot be seen. The number of instructions the server
executes per sign-in does not depend on either: each server (``authgate serve``, or
bench/raw_signin_server.py) runs under valgrind's callgrind with instrumentation off while it
starts and warms up, then counts exactly the sign-ins of the measured batch
(``callgrind_control`` switches instrumentation on, zeroes and dumps the counters around it).

A sign-in is what bench/load.py's workload does: the initiation, the fake provider's
authorize step (in this process), the callback with its token request, ID-token check and
writes, on PostgreSQL. ``registrations``: every measured sign-in registers a new user;
``logins``: users registered during the warm-up sign in again.

It counts the server process's own user-space instructions (every thread): not the kernel's
work for its sockets, not PostgreSQL's, and not what a CPU does per instruction
(cryptography's instructions weigh differently under valgrind's emulated CPU). Compare
builds of the same server with it; the ratio to raw is indicative. The raw floor runs twice
(bench/raw_pool.py): ``raw`` on authgate's own pool, the fair floor, and ``raw-asyncpg`` on
asyncpg's pool; "authgate/raw" and "authgate/raw-asyncpg" are each floor's instructions per
sign-in over authgate's.

    .venv/bin/python bench/signin_instructions.py                   # 300 sign-ins per count
    .venv/bin/python bench/signin_instructions.py --sign-ins 100 authgate
    .venv/bin/python bench/signin_instructions.py --quick           # 50 logins per server

Needs valgrind (``apt-get install valgrind``) and PostgreSQL (``--admin-url``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.callgrind import VALGRIND, control, dumped_instructions
from bench.harness import (
    ServiceProcess,
    SignInDriver,
    authgate_command,
    migrate,
    service_config,
    temp_folder,
    write_config,
)
from bench.load import DEFAULT_ADMIN_URL, RAW_SIGNIN_SERVER, Settings, Workload, database
from bench.raw_pool import BASELINES as RAW_POOLS
from tests.fakeidp import FakeIdP

SERVERS = ("authgate", *RAW_POOLS)
PHASES = ("registrations", "logins")
WARMUP = 60  # sign-ins before counting: pools, statement caches, the JWKS, registered users
CONCURRENCY = 4


async def _sign_ins(workload: Workload, count: int) -> None:
    done = 0

    async def worker() -> None:
        nonlocal done
        while done < count:
            done += 1
            if await workload.sign_in() is None:
                raise RuntimeError(f"a sign-in failed: {workload.recorder.errors[-1]}")

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def count(
    kind: str, phase: str, admin_url: str, sign_ins: int, keep: bool = False
) -> dict[str, Any]:
    folder = temp_folder(f"authgate-bench-signin-ir-{kind}-{phase}-")
    registering = phase == "registrations"
    settings = Settings(
        users=10**9 if registering else WARMUP, admin_url=admin_url, database="postgres"
    )
    async with FakeIdP() as fake, database(settings, folder) as (url, fresh):
        config = service_config(
            folder,
            fake,
            database_url=url,
            overrides={
                "ratelimit": {"callback": "100000000/minute", "initiation": "100000000/minute"},
            },
        )
        config_file = write_config(folder, config)
        if fresh:
            await asyncio.to_thread(migrate, config_file)
        served = (
            [sys.executable, str(RAW_SIGNIN_SERVER), "--config", str(config_file)]
            if kind in RAW_POOLS
            else authgate_command("serve", "--config", str(config_file))
        )
        if kind in RAW_POOLS:
            served += ["--pool", RAW_POOLS[kind]]
        out = folder / f"{kind}.callgrind"
        server = ServiceProcess(
            config_file,
            command=[*VALGRIND, f"--callgrind-out-file={out}.%p", *served],
            start_timeout=900,
            stop_timeout=120,
        )
        async with server, SignInDriver(fake, connections=CONCURRENCY * 2) as driver:
            workload = Workload(settings, driver, server.url)
            workload.deadline = float("inf")
            await _sign_ins(workload, WARMUP)  # uninstrumented
            control("-i", "on", str(server.pid))
            control("-z", str(server.pid))
            before = dict(workload.recorder.counts)
            await _sign_ins(workload, sign_ins)
            control("-d", str(server.pid))
            kinds = {
                k: workload.recorder.counts.get(k, 0) - before.get(k, 0)
                for k in ("sign_in_register", "sign_in_login")
            }
            instructions = await dumped_instructions(out, server.pid)
            dump = f"{out}.{server.pid}.1"
    if keep:
        print(f"{kind} {phase}: {dump}", file=sys.stderr)
    else:
        shutil.rmtree(folder, ignore_errors=True)
    measured = kinds["sign_in_register" if registering else "sign_in_login"]
    if measured != sum(kinds.values()):
        raise RuntimeError(f"{kind} {phase}: the batch mixed kinds: {kinds}")
    return {"sign_ins": measured, "instructions_per_sign_in": instructions // measured}


async def run(
    admin_url: str, kinds: list[str], phases: list[str], sign_ins: int, keep: bool = False
) -> dict[str, Any]:
    report: dict[str, Any] = {"sign_ins": sign_ins}
    for phase in phases:
        counts: dict[str, Any] = {}
        for kind in kinds:
            counts[kind] = await count(kind, phase, admin_url, sign_ins, keep)
            print(phase, kind, counts[kind], file=sys.stderr, flush=True)
        for baseline in RAW_POOLS:
            if baseline in counts and "authgate" in counts:
                counts[f"authgate/{baseline}"] = round(
                    counts[baseline]["instructions_per_sign_in"]
                    / counts["authgate"]["instructions_per_sign_in"],
                    3,
                )
        report[phase] = counts
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("servers", nargs="*", help=f"any of {', '.join(SERVERS)} (default: all)")
    parser.add_argument("--phase", choices=PHASES, action="append", help="default: both")
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--sign-ins", type=int, default=300)
    parser.add_argument("--keep", action="store_true", help="keep the callgrind dumps (printed)")
    parser.add_argument("--quick", action="store_true", help="50 logins per server")
    args = parser.parse_args()
    if args.quick:
        args.sign_ins, args.phase = 50, args.phase or ["logins"]
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    unknown = set(args.servers) - set(SERVERS)
    if unknown:
        parser.error(f"unknown server(s): {', '.join(sorted(unknown))}")
    kinds, phases = args.servers or list(SERVERS), args.phase or list(PHASES)
    report = asyncio.run(run(args.admin_url, kinds, phases, args.sign_ins, args.keep))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
