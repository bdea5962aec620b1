"""Instructions per OpenID Provider operation under callgrind (the machine-load-proof variant
of bench/openid_bench.py).

``authgate serve`` runs under valgrind's callgrind with instrumentation off while it starts and
warms up; ``callgrind_control`` switches it on, zeroes and dumps the counters around a batch of:

* ``code_flow``: single-sign-on code flows (authorize with PKCE, then the token endpoint),
  driven as bench/openid_bench.py drives them;
* ``refresh``: refresh-token rotations;
* ``introspection``: introspections of one access token, and the same batch against
  bench/raw_introspection_server.py (the raw aiohttp + asyncpg handler) under callgrind too,
  twice (bench/raw_pool.py): ``raw`` on authgate's own pool (the fair floor) and
  ``raw-asyncpg`` on asyncpg's pool. "raw / authgate" is raw's instructions per request over
  authgate's ("raw-asyncpg / authgate" likewise); and against authgate with
  ``rest.access_log: false`` (the raw handler writes no log): "..., access log off".

Counted: the server process's own user-space instructions (every thread), not the kernel's, not
PostgreSQL's; RSA under valgrind's emulated CPU counts more than it costs natively.

    .venv/bin/python bench/openid_instructions.py                 # 200 of each
    .venv/bin/python bench/openid_instructions.py --operations 50 # a smoke run
    .venv/bin/python bench/openid_instructions.py --quick         # introspection, 50 each
    .venv/bin/python bench/openid_instructions.py --only introspection

Needs valgrind (``apt-get install valgrind``) and PostgreSQL.
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

import aiohttp
import asyncpg

from authgate.entrypoints.rest.eventloop import default_event_loop
from bench.callgrind import VALGRIND, control, dumped_instructions, instructions_per_request
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
from bench.httpload import closed_loop
from bench.load import DEFAULT_ADMIN_URL
from bench.openid_bench import (
    CLIENTS,
    INTROSPECTOR_SECRET,
    ISSUER,
    NO_LOG,
    Browser,
    introspected,
    introspection_request,
    seed,
)
from bench.raw_pool import BASELINES as RAW_POOLS


def under_callgrind(folder: Path, kind: str, command: list[str], port: int) -> ServiceProcess:
    out = folder / f"{kind}.callgrind"
    return ServiceProcess(
        folder / "config.yaml",
        port=port,
        command=[*VALGRIND, f"--callgrind-out-file={out}.%p", *command],
        start_timeout=900,
        stop_timeout=120,
    )


async def counted(
    server: ServiceProcess, out: Path, operations: int, browser: Browser, kind: str
) -> dict[str, Any]:
    """Instructions per flow or refresh over ``operations`` of them on 4 concurrent chains."""
    workers = 4
    chains = [
        str((await browser.flow("openid offline_access"))["refresh_token"]) for _ in range(workers)
    ]
    done = 0

    async def chain(worker: int, until: int) -> None:
        nonlocal done
        while done < until:
            done += 1
            if kind == "code_flow":
                await browser.flow()
            else:
                chains[worker] = await browser.refresh(chains[worker])

    await chain(0, 20)  # warm-up, uninstrumented
    done = 0
    control("-i", "on", str(server.pid))
    control("-z", str(server.pid))
    await asyncio.gather(*(chain(w, operations) for w in range(workers)))
    control("-d", str(server.pid))
    instructions = await dumped_instructions(out, server.pid)
    control("-i", "off", str(server.pid))
    return {"operations": done, "instructions_per_operation": instructions // done}


async def run(admin_url: str, operations: int, only: list[str]) -> dict[str, Any]:
    folder = temp_folder("authgate-bench-openid-ir-")
    name = f"authgate_bench_openid_ir_{os.getpid()}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    report: dict[str, Any] = {"operations": operations}
    try:
        port = free_port()
        overrides = {
            "rest": {"public_url": ISSUER, "port": port},
            "clients": CLIENTS,
            # Limits never reached (all of it comes from 127.0.0.1): the limiters' cost counts.
            "ratelimit": {
                key: "1000000000/minute"
                for key in ("token", "token_address", "authorize", "userinfo")
            },
        }
        config = write_config(
            folder, service_config(folder, None, database_url=url, overrides=overrides)
        )
        await asyncio.to_thread(migrate, config)
        account = await seed(url)
        command = authgate_command("serve", "--config", str(config))
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
            # code flows and refreshes: one callgrind dump each, in separate server runs
            for kind in [k for k in ("code_flow", "refresh") if k in only]:
                server = under_callgrind(folder, kind, command, port)
                async with server:
                    session = await mint_session(
                        folder / "session-keys.json", account, database_url=url
                    )
                    browser = Browser(http, server.url, session)
                    out = folder / f"{kind}.callgrind"
                    report[kind] = await counted(server, out, operations, browser, kind)
                print(kind, report[kind], file=sys.stderr, flush=True)
            if "introspection" not in only:
                return report
            # introspection: authgate (plain, the token minted beforehand), then the raw handler
            async with ServiceProcess(config) as plain:
                session = await mint_session(
                    folder / "session-keys.json", account, database_url=url
                )
                access = str(
                    (await Browser(http, plain.url, session).flow("openid offline_access"))[
                        "access_token"
                    ]
                )
                async with http.get(f"{plain.url}/.well-known/jwks.json") as response:
                    jwks = folder / "jwks.json"
                    jwks.write_bytes(await response.read())
            raw_port = free_port()
            # Written now, with ports free now (not before the flows' thousands of client
            # connections, any of which may take a port chosen then as its own).
            no_log = {**overrides, "rest": {**overrides["rest"], "access_log": False}}
            no_log_config = write_config(
                folder,
                service_config(folder, None, database_url=url, overrides=no_log),
                "config-no-access-log.yaml",
            )
            raw = Path(__file__).with_name("raw_introspection_server.py")
            servers = {
                "authgate": (command, port),
                NO_LOG: (authgate_command("serve", "--config", str(no_log_config)), port),
            }
            for baseline, pool in RAW_POOLS.items():
                servers[baseline] = (
                    [
                        *(sys.executable, str(raw), str(raw_port), url, str(jwks)),
                        *("rs", INTROSPECTOR_SECRET, default_event_loop(), pool),
                    ],
                    raw_port,
                )
            counts: dict[str, Any] = {}
            answers = {}
            for kind, (cmd, p) in servers.items():
                out = folder / f"introspection-{kind}.callgrind"
                async with under_callgrind(folder, f"introspection-{kind}", cmd, p) as server:
                    answers[kind] = await introspected(http, p, access)
                    request = introspection_request(p, access)
                    await closed_loop(p, request, connections=4, seconds=120, max_requests=100)
                    counts[kind] = await instructions_per_request(
                        kind, server.pid, out, p, request, operations
                    )
                print(f"introspection {kind}", counts[kind], file=sys.stderr, flush=True)
            if not answers["authgate"].get("active") or any(
                answer != answers["raw"] for answer in answers.values()
            ):
                raise RuntimeError(f"the servers answer differently: {answers}")
            report["introspection"] = {"servers": counts}
            for baseline in RAW_POOLS:
                floor = counts[baseline]["instructions_per_request"]
                report["introspection"][f"{baseline}/authgate"] = round(
                    floor / counts["authgate"]["instructions_per_request"], 3
                )
                report["introspection"][f"{baseline}/authgate, access log off"] = round(
                    floor / counts[NO_LOG]["instructions_per_request"], 3
                )
    finally:
        admin = await asyncpg.connect(admin_url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
        shutil.rmtree(folder, ignore_errors=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--operations", type=int, default=200)
    kinds = ("code_flow", "refresh", "introspection")
    parser.add_argument("--only", choices=kinds, action="append", help="repeatable; all by default")
    parser.add_argument(
        "--quick", action="store_true", help="introspection only, 50 each (a smoke run)"
    )
    args = parser.parse_args()
    if args.quick:
        args.operations, args.only = 50, args.only or ["introspection"]
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    report = asyncio.run(run(args.admin_url, args.operations, args.only or list(kinds)))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
