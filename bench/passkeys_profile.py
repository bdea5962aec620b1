"""Where a passkey sign-in's instructions go, authgate against its floor: the callgrind dumps
of bench/passkeys_instructions.py kept, with each server's instructions per sign-in by object
file (the interpreter, cryptography's Rust, asyncpg's and aiohttp's extensions...).

    .venv/bin/python bench/passkeys_profile.py --keep /tmp/pk   # dumps in /tmp/pk
    callgrind_annotate /tmp/pk/authgate.callgrind.PID.1         # C functions, for a closer look

Callgrind sees C functions, not Python ones: the interpreter's share is the Python code of
authgate, aiohttp, asyncpg, fido2 and the standard library together. What a Python part
costs is found by running without it (docs/benchmarks.md, "Passkeys against the floor").
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import shutil
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench.callgrind import VALGRIND
from bench.harness import (
    ServiceProcess,
    SignInDriver,
    authgate_command,
    migrate,
    temp_folder,
    write_config,
)
from bench.load import DEFAULT_ADMIN_URL
from bench.passkeys_bench import (
    drop_database,
    floor_server,
    fresh_database,
    passkeys_config,
    with_passkeys,
)
from bench.passkeys_instructions import counted
from tests.fakeidp import FakeIdP, FakeUser

_NAME = re.compile(r"\((\d+)\)(?: (.*))?")


def by_object(dump: Path) -> collections.Counter[str]:
    """Self instructions per object file of a callgrind dump (names compressed or not)."""
    names: dict[str, str] = {}
    totals: collections.Counter[str] = collections.Counter()
    current, after_call = "?", False

    def named(text: str) -> str:
        found = _NAME.match(text)
        if found is None:
            return text
        if found.group(2):
            names[found.group(1)] = found.group(2)
        return names.get(found.group(1), found.group(1))

    for line in dump.read_text().splitlines():
        if line.startswith("ob="):
            current = named(line[3:].strip())
        elif line.startswith("cob="):
            named(line[4:].strip())
        elif line.startswith("calls="):
            after_call = True  # the next cost line is the call's inclusive cost
        elif line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if after_call:
                after_call = False
            elif len(parts) >= 2:
                totals[current.rsplit("/", 1)[-1]] += int(parts[1])
    return totals


def _dump_of(keep: Path, name: str) -> Path:
    """The server's first dump (``{name}.callgrind.{pid}.1``; the folder was emptied)."""
    [dump] = keep.glob(f"{name}.callgrind.*.1")
    return dump


async def run(keep: Path, operations: int, users: int) -> dict[str, object]:
    folder = temp_folder("authgate-bench-passkeys-profile-")
    url = await fresh_database(DEFAULT_ADMIN_URL)
    report: dict[str, object] = {}
    try:
        async with FakeIdP() as fake:
            config = passkeys_config(folder, fake, url)
            config_file = write_config(folder, config)
            migrate(config_file)
            async with (
                ServiceProcess(config_file) as service,
                SignInDriver(fake, connections=4) as driver,
                aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
            ):
                people = [FakeUser(sub=f"bench-{i}") for i in range(users)]
                authenticators = await with_passkeys(driver, http, service.url, people)
            raw_file, floor_command = floor_server(folder, config)
            servers = {
                "authgate": (authgate_command("serve", "--config", str(config_file)), config_file),
                "floor": (floor_command, raw_file),
            }
            for name, (command, file) in servers.items():
                out = keep / f"{name}.callgrind"
                result = await counted(command, file, out, operations, authenticators)
                dump = _dump_of(keep, name)
                shares = by_object(dump)
                done = result["sign_ins"]
                report[name] = {
                    **result,
                    "dump": str(dump),
                    "by_object": {k: v // done for k, v in shares.most_common(12)},
                }
    finally:
        await drop_database(DEFAULT_ADMIN_URL, url)
        shutil.rmtree(folder, ignore_errors=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, required=True, help="a folder for the dumps")
    parser.add_argument("--operations", type=int, default=200)
    parser.add_argument("--users", type=int, default=10)
    args = parser.parse_args()
    if shutil.which(VALGRIND[0]) is None:
        print("valgrind is not installed", file=sys.stderr)
        return 2
    args.keep.mkdir(parents=True, exist_ok=True)
    for old in args.keep.glob("*.callgrind.*"):
        old.unlink()
    print(json.dumps(asyncio.run(run(args.keep, args.operations, args.users)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
