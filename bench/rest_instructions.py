"""Instructions per ``GET /items/{id}?view=...`` (bench/rest_layer.py's endpoint) under callgrind.

bench/rest_layer.py times the servers and needs a quiet machine: on a busy one they share their
core with other work and the ratios move by several per cent, as much as a change of the REST
layer does. The number of instructions a server executes per request does not depend on what
else runs, so this counts it: each server (``rest_layer.py --serve KIND``, the same code) runs
under valgrind's callgrind with instrumentation off while it starts and warms up, then counts
exactly the requests of the measured batch (``callgrind_control`` switches instrumentation on,
zeroes and dumps the counters around it).

It counts the server process's own user-space instructions, not the kernel's work for the
sockets (the same for every server) nor what a CPU does per instruction. The ratios
``raw/KIND`` read as throughput ratios with that caveat: authgate and raw aiohttp share the
server, parser and loop, so their ratio tracks the timed one closely; a peer on another stack
(BlackSheep, with more compiled code) executes a different mix of instructions and its ratio
is only indicative.

    .venv/bin/python bench/rest_instructions.py                      # authgate, raw-aiohttp
    .venv/bin/python bench/rest_instructions.py --requests 500 authgate raw-aiohttp blacksheep
    .venv/bin/python bench/rest_instructions.py --access-log authgate   # the access log's cost

Needs valgrind (``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.callgrind import VALGRIND, instructions_per_request
from bench.httpload import closed_loop, request_bytes

REST_LAYER = Path(__file__).with_name("rest_layer.py")
LOAD_PATH = "/items/42?view=full"  # rest_layer.LOAD_PATH (that module is a script's, not ours)
KINDS = (
    "authgate",
    "authgate-traced",
    "raw-aiohttp",
    "authgate-asyncio",
    "fastapi-h11",
    "fastapi",
    "litestar",
    "blacksheep",
)
REFERENCE = "raw-aiohttp"


async def count(
    folder: Path, kind: str, loop: str, requests: int, access_log: bool = False
) -> dict[str, Any]:
    out = folder / f"{kind}.callgrind"
    command = [
        *VALGRIND,
        f"--callgrind-out-file={out}.%p",
        sys.executable,
        str(REST_LAYER),
        "--serve",
        kind,
        "--loop",
        loop,
        *(["--access-log"] if access_log else []),
    ]
    # The server prints its port once listening and runs until its stdin closes.
    # One string hashing for every run: with random ones, a server's count moves by about 1 %
    # from run to run (dict and set probing), as much as the changes it is meant to show.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=900)
        if not line.strip().isdigit():
            raise RuntimeError(f"{kind} did not start (exit status {proc.returncode})")
        port = int(line)
        request = request_bytes(LOAD_PATH, port)
        # warm up uninstrumented: first-call caches, the allocator's arenas
        await closed_loop(port, request, connections=4, seconds=300, max_requests=200)
        return await instructions_per_request(kind, proc.pid, out, port, request, requests)
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), timeout=120)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def run(
    kinds: list[str], loop: str, requests: int, access_log: bool = False
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="authgate-rest-ir-"))
    counts: dict[str, Any] = {}
    try:
        for kind in kinds:
            counts[kind] = await count(folder, kind, loop, requests, access_log)
            print(kind, counts[kind], file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report: dict[str, Any] = {
        "path": LOAD_PATH,
        "loop": loop,
        "access_log": access_log,
        "servers": counts,
    }
    for base in (REFERENCE, "blacksheep"):
        if base in counts:
            ref = counts[base]["instructions_per_request"]
            for kind in counts:
                if kind != base:
                    each = counts[kind]["instructions_per_request"]
                    report[f"{kind}/{base} (by {base}'s instructions / {kind}'s)"] = round(
                        ref / each, 3
                    )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "servers", nargs="*", help=f"any of {', '.join(KINDS)} (default: authgate {REFERENCE})"
    )
    parser.add_argument("--requests", type=int, default=1000, help="counted requests per server")
    parser.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        default=None,
        help="event loop of authgate and raw-aiohttp (default: authgate's own default)",
    )
    parser.add_argument(
        "--access-log",
        action="store_true",
        help="authgate's servers write the access log as `authgate serve` does (to stderr, "
        "which this bench discards); raw aiohttp and the peers still log nothing",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    unknown = set(args.servers) - set(KINDS)
    if unknown:
        parser.error(f"unknown server(s): {', '.join(sorted(unknown))}")
    loop = args.loop
    if loop is None:
        from authgate.entrypoints.rest.eventloop import default_event_loop

        loop = default_event_loop()
    kinds = args.servers or ["authgate", REFERENCE]
    report = asyncio.run(run(kinds, loop, args.requests, args.access_log))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
