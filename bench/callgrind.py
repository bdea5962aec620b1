"""Instructions per request of a server running under ``valgrind --tool=callgrind`` started with
``--instr-atstart=no`` (bench/providers_instructions.py, bench/rest_instructions.py): what the
two benches share once their server listens and has been warmed up uninstrumented."""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path
from typing import Any

from bench.httpload import closed_loop

VALGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]


def control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], capture_output=True, check=False)


def written(path: Path) -> bool:
    return path.exists() and path.stat().st_size > 0


def total_instructions(dump: Path) -> int:
    found = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no instruction total in {dump}")
    return int(found.group(1))


async def instructions_per_request(
    kind: str, pid: int, out: Path, port: int, request: bytes, requests: int
) -> dict[str, Any]:
    """Instrument the server ``pid`` (its dumps ``{out}.{pid}.N``) for ``requests`` requests on
    4 connections, dump, and divide its instruction total by the requests answered."""
    control("-i", "on", str(pid))
    control("-z", str(pid))
    result = await closed_loop(port, request, connections=4, seconds=900, max_requests=requests)
    control("-d", str(pid))
    if result.errors:
        raise RuntimeError(f"{kind}: {result.errors} errors, first: {result.first_error}")
    instructions = await dumped_instructions(out, pid)
    return {"requests": result.count, "instructions_per_request": instructions // result.count}


async def dumped_instructions(out: Path, pid: int, wait_seconds: float = 60.0) -> int:
    """The instruction total of the first dump (``{out}.{pid}.1``) of ``callgrind_control -d``,
    once valgrind has written it."""
    dump = Path(f"{out}.{pid}.1")
    for _ in range(int(wait_seconds / 0.2)):
        if written(dump):
            break
        await asyncio.sleep(0.2)
    return total_instructions(dump)
