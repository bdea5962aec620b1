"""Instructions per passkey sign-in under callgrind: authgate and its hand-written floor (the
machine-load-proof variant of bench/passkeys_bench.py).

The benchmark's service (passkeys on, PostgreSQL) first runs normally while ``--users``
accounts register through the fake provider and add a passkey each. Then ``authgate serve`` on
the same database, and after it bench/raw_passkeys_server.py, each run under valgrind's
callgrind with instrumentation off while it starts and warms up (20 sign-ins);
``callgrind_control`` switches it on, zeroes and dumps the counters around ``--operations``
passkey sign-ins (the request options, the assertion signed by this process, the verification
and the session) on 4 concurrent loops. Every answer is checked (200 with a session cookie).

Counted: the server process's own user-space instructions (every thread), not the kernel's,
not PostgreSQL's, not the load generator's; ES256 under valgrind's emulated CPU counts more
than it costs natively. The floor runs twice (bench/raw_pool.py): ``floor`` on authgate's own
pool (the fair floor) and ``floor-asyncpg`` on asyncpg's pool. "floor / authgate" is the
floor's instructions per sign-in over authgate's ("floor-asyncpg / authgate" likewise).

    .venv/bin/python bench/passkeys_instructions.py                  # 200 sign-ins each
    .venv/bin/python bench/passkeys_instructions.py --operations 30  # a smoke run
    .venv/bin/python bench/passkeys_instructions.py --quick          # 30 sign-ins, 2 users

Needs valgrind (``apt-get install valgrind``) and PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench.callgrind import VALGRIND, control, dumped_instructions
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
    passkey_sign_in,
    passkeys_config,
    with_passkeys,
)
from tests.fakeidp import FakeIdP, FakeUser
from tests.support.webauthn import SoftAuthenticator


async def counted(
    command: list[str],
    config_file: Path,
    out: Path,
    operations: int,
    authenticators: list[SoftAuthenticator],
) -> dict[str, Any]:
    """Instructions per passkey sign-in of the server ``command`` runs (under callgrind)."""
    server = ServiceProcess(
        config_file,
        command=[*VALGRIND, f"--callgrind-out-file={out}.%p", *command],
        start_timeout=900,
        stop_timeout=120,
    )
    async with (
        server,
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
    ):
        done = failed = 0

        async def loop(until: int) -> None:
            nonlocal done, failed
            while done < until:
                done += 1
                if not await passkey_sign_in(http, server.url, random.choice(authenticators)):
                    failed += 1

        await loop(20)  # warm-up, uninstrumented
        done = failed = 0
        control("-i", "on", str(server.pid))
        control("-z", str(server.pid))
        await asyncio.gather(*(loop(operations) for _ in range(4)))
        control("-d", str(server.pid))
        if failed:
            raise RuntimeError(f"{failed} of {done} passkey sign-ins failed")
        instructions = await dumped_instructions(out, server.pid)
        control("-i", "off", str(server.pid))
    return {"sign_ins": done, "instructions_per_sign_in": instructions // done}


async def run(admin_url: str, operations: int, users: int) -> dict[str, Any]:
    folder = temp_folder("authgate-bench-passkeys-ir-")
    url = await fresh_database(admin_url)
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
            authgate = await counted(
                authgate_command("serve", "--config", str(config_file)),
                config_file,
                folder / "authgate.callgrind",
                operations,
                authenticators,
            )
            print("authgate", authgate, file=sys.stderr, flush=True)
            floors = {}
            for name, pool in (("floor", "authgate"), ("floor-asyncpg", "asyncpg")):
                raw_file, command = floor_server(folder, config, pool)
                floors[name] = await counted(
                    command, raw_file, folder / f"{name}.callgrind", operations, authenticators
                )
                print(name, floors[name], file=sys.stderr, flush=True)
    finally:
        await drop_database(admin_url, url)
        shutil.rmtree(folder, ignore_errors=True)
    ours = authgate["instructions_per_sign_in"]
    report: dict[str, Any] = {"operations": operations, "authgate": authgate, **floors}
    for name, floor in floors.items():
        report[f"{name}/authgate"] = round(floor["instructions_per_sign_in"] / ours, 3)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=200)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--quick", action="store_true", help="--operations 30 --users 2")
    args = parser.parse_args()
    if args.quick:
        args.operations, args.users = 30, 2
    if shutil.which(VALGRIND[0]) is None:
        print("valgrind is not installed", file=sys.stderr)
        return 2
    report = asyncio.run(run(args.admin_url, args.operations, args.users))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
