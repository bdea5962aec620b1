"""Calls per account read: ``authgate serve`` under cProfile for a batch of ``GET
/v1/account/providers`` on PostgreSQL, the functions ranked by their own time with their calls
per request.

What bench/providers_instructions.py counts (instructions, under callgrind) says how much a
request costs; this says where, in Python's terms, and how often each function runs per
request: a count of 2 where one would do is work done twice (a coroutine counts once per
resumption). Times are the serving thread's CPU (not wall time, which the machine's other load
and the log thread's hold on the GIL would fill); cProfile slows every call, small ones most,
so read the shares as a map, not as the cost; the counts are exact.

    .venv/bin/python bench/read_path_profile.py                      # 2,000 requests
    .venv/bin/python bench/read_path_profile.py --requests 500 --top 60 --nolog

The server starts through :func:`profiled` (this file run as ``--serve``), which switches the
profiler on at SIGUSR1 and off, writing its statistics, at SIGUSR2: the warm-up (pool,
caches, first statements) stays out.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from authgate.adapters.jose.keys import load_or_create_keys
from bench.harness import (
    ServiceProcess,
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


def profiled(stats_file: str, argv: list[str]) -> int:
    """``authgate ARGV`` with the profiler switched by SIGUSR1 (on) and SIGUSR2 (off, dump)."""
    profile = cProfile.Profile(time.thread_time)  # this thread's CPU: not the machine's load

    def on(_signum: int, _frame: object) -> None:
        profile.enable()

    def off(_signum: int, _frame: object) -> None:
        profile.disable()
        profile.dump_stats(stats_file)

    signal.signal(signal.SIGUSR1, on)
    signal.signal(signal.SIGUSR2, off)
    from authgate.entrypoints.cli import main

    return main(argv)


async def run(admin_url: str, requests: int, access_log: bool) -> pstats.Stats:
    folder = temp_folder("authgate-bench-profile-")
    name = f"authgate_bench_prof_{os.getpid()}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    stats_file = folder / "serve.prof"
    try:
        base = write_config(folder, service_config(folder, None, database_url=url))
        await asyncio.to_thread(migrate, base)
        account = await seed(url)
        load_or_create_keys(folder / "session-keys.json", create=True)
        token = await mint_session(folder / "session-keys.json", account, database_url=url)
        port = free_port()
        overrides: dict[str, Any] = {"rest": {"port": port, "access_log": access_log}}
        config = write_config(
            folder, service_config(folder, None, database_url=url, overrides=overrides), "p.yaml"
        )
        command = [
            *(sys.executable, __file__, "--serve", str(stats_file)),
            *("serve", "--config", str(config)),
        ]
        request = request_bytes(PATH, port, {"Authorization": f"Bearer {token}"})
        async with ServiceProcess(config, port=port, command=command) as server:
            await closed_loop(port, request, connections=4, seconds=60, max_requests=300)
            server.signal(signal.SIGUSR1)
            await asyncio.sleep(0.2)
            done = await closed_loop(
                port, request, connections=4, seconds=600, max_requests=requests
            )
            server.signal(signal.SIGUSR2)
            for _ in range(100):
                await asyncio.sleep(0.1)
                if stats_file.exists() and stats_file.stat().st_size:
                    break
            if done.errors:
                raise RuntimeError(f"{done.errors} errors, first: {done.first_error}")
            await asyncio.sleep(0.5)  # the dump is written in one go; let it finish
        stats = pstats.Stats(str(stats_file))
        return stats
    finally:
        admin = await asyncpg.connect(admin_url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
        shutil.rmtree(folder, ignore_errors=True)


def report(stats: pstats.Stats, requests: int, top: int) -> None:
    rows = []
    for (file, line, function), (_cc, calls, own, total, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{function} ({file.split('site-packages/')[-1].split('/src/')[-1]}:{line})"
        rows.append((own, total, calls, where))
    rows.sort(reverse=True)
    all_own = sum(r[0] for r in rows)
    print(f"{'own %':>6} {'cum %':>6} {'calls/req':>9}  function")
    for own, total, calls, where in rows[:top]:
        print(
            f"{100 * own / all_own:6.1f} {100 * total / all_own:6.1f} "
            f"{calls / requests:9.2f}  {where}"
        )


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        return profiled(sys.argv[2], sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--top", type=int, default=80)
    parser.add_argument("--nolog", action="store_true", help="rest.access_log: false")
    args = parser.parse_args()
    stats = asyncio.run(run(args.admin_url, args.requests, not args.nolog))
    report(stats, args.requests, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
