"""Passkey sign-ins per server CPU second on PostgreSQL, with a provider sign-in beside it in
the same run (target: at least 1,500 passkey sign-ins per server CPU second).

One ``authgate serve`` on a fresh, migrated PostgreSQL database, with passkeys on and the fake
identity provider's three providers. ``--users`` accounts register through google and each
adds a passkey (a software authenticator: EC P-256 keys, tests/support/webauthn.py). Then two
measured phases on the same server, one after the other, each ``--seconds`` long with
``--concurrency`` browsers at once:

* passkeys: a whole passkey sign-in per iteration — the request options
  (``POST /v1/passkeys/authentication/options``), the authenticator's assertion (signed by the
  load generator, not the server), the verification and the session
  (``POST /v1/passkeys/authentication``);
* provider: a whole provider sign-in per iteration (``intent=login``: the initiation, the fake
  provider's authorize step, the callback's code exchange, ID token check and session).

"Per server CPU second" is sign-ins per second of the server process's CPU time (user + system,
/proc/PID/stat) over the phase; the database's and the load generator's CPU are not counted.
The server is pinned to CPU 0 and the load generator (which signs every assertion, and serves
the fake provider) to CPU 1, as bench/openid_bench.py does: unpinned, the two shared both cores
and one run's figures differed from the next by a third.
Each phase's answers are checked: every passkey sign-in answered 200 with a session cookie,
every provider sign-in redirected without an error. The figures of this shared machine vary
within a day: compare the two phases of one run, not runs of different days.

    .venv/bin/python bench/passkeys_bench.py                       # the recorded run
    .venv/bin/python bench/passkeys_bench.py --seconds 2 --users 5  # a smoke run
    .venv/bin/python bench/passkeys_bench.py --quick                # the same smoke run

The raw floor (bench/raw_passkeys_server.py) runs twice after authgate, on the same database
and passkeys (bench/raw_pool.py): on authgate's own pool (``raw_floor``, the fair floor) and on
asyncpg's pool (``raw_floor_asyncpg``); authgate's ratio to each is reported.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import asyncpg

from bench.harness import (
    ServiceProcess,
    SignInDriver,
    free_port,
    migrate,
    service_config,
    temp_folder,
    write_config,
)
from bench.load import DEFAULT_ADMIN_URL, pinned_to
from bench.raw_pool import BASELINES as RAW_POOLS
from bench.raw_pool import DEFAULT_POOL
from tests.fakeidp import FakeIdP, FakeUser
from tests.support.webauthn import SoftAuthenticator

ORIGIN = "https://app.example.com"  # the application's pages run the ceremonies
RP_ID = "example.com"
BINDING = "__Host-authgate_binding"
TARGET = 1500  # passkey sign-ins per server CPU second
RAW_SERVER = Path(__file__).resolve().parent / "raw_passkeys_server.py"


async def fresh_database(admin_url: str) -> str:
    name = f"authgate_passkeys_{os.getpid()}_{int(time.time())}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return admin_url.rsplit("/", 1)[0] + f"/{name}"


async def drop_database(admin_url: str, url: str) -> None:
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    finally:
        await admin.close()


async def add_passkey(
    http: aiohttp.ClientSession, base: str, token: str, authenticator: SoftAuthenticator
) -> None:
    bearer = {"Authorization": f"Bearer {token}"}
    async with http.post(
        f"{base}/v1/account/passkeys/registration/options", headers=bearer
    ) as asked:
        options = await asked.json()
        binding = asked.cookies[BINDING].value
    async with http.post(
        f"{base}/v1/account/passkeys/registration",
        json=authenticator.create(options, ORIGIN),
        headers={**bearer, "Cookie": f"{BINDING}={binding}"},
    ) as added:
        if added.status != 201:
            raise RuntimeError(f"adding a passkey answered {added.status}: {await added.text()}")


def passkeys_config(folder: Path, fake: FakeIdP, database_url: str) -> dict[str, Any]:
    """The benchmark's service: passkeys on for ORIGIN, the fake provider's three providers,
    no access log, limits out of the way."""
    return service_config(
        folder,
        fake,
        database_url=database_url,
        overrides={
            "passkeys": {"enabled": True, "rp_id": RP_ID, "origins": [ORIGIN]},
            # One address makes every request: the limits would measure themselves.
            "ratelimit": {
                "callback": "1000000/minute",
                "initiation": "1000000/minute",
                "passkeys": "1000000/minute",
            },
            "rest": {"access_log": False},
        },
    )


def floor_server(
    folder: Path, config: dict[str, Any], pool: str = DEFAULT_POOL
) -> tuple[Path, list[str]]:
    """The floor's configuration file (the service's, on a port of its own) and its command,
    on the pool ``pool`` (bench/raw_pool.py)."""
    raw = {**config, "rest": {**config["rest"], "port": free_port()}}
    raw_file = write_config(folder, raw, f"raw-{pool}.yaml")
    return raw_file, [sys.executable, str(RAW_SERVER), "--config", str(raw_file), "--pool", pool]


async def with_passkeys(
    driver: SignInDriver, http: aiohttp.ClientSession, base: str, users: list[FakeUser]
) -> list[SoftAuthenticator]:
    """Each user registered through google, with a passkey added: their authenticators."""
    authenticators = []
    for user in users:
        registered = await driver.complete(base, "google", user=user, intent="register")
        assert registered.session is not None, registered
        authenticator = SoftAuthenticator(counting=False)
        await add_passkey(http, base, registered.session, authenticator)
        authenticators.append(authenticator)
    return authenticators


async def passkey_sign_in(
    http: aiohttp.ClientSession, base: str, authenticator: SoftAuthenticator
) -> bool:
    async with http.post(f"{base}/v1/passkeys/authentication/options") as asked:
        options = await asked.json()
        binding = asked.cookies[BINDING].value
    async with http.post(
        f"{base}/v1/passkeys/authentication",
        json=authenticator.get(options, ORIGIN),
        headers={"Cookie": f"{BINDING}={binding}"},
    ) as answer:
        await answer.read()
        return answer.status == 200 and "session" in answer.cookies


async def measured(
    service: ServiceProcess, seconds: float, concurrency: int, one: Any
) -> dict[str, Any]:
    """Run ``one()`` (a sign-in; True when it succeeded) from ``concurrency`` loops for
    ``seconds``: the count, the failures and the server's CPU seconds over the period."""
    done = failed = 0
    stop_at = time.monotonic() + seconds

    async def loop() -> None:
        nonlocal done, failed
        while time.monotonic() < stop_at:
            if await one():
                done += 1
            else:
                failed += 1

    cpu_before, started = service.cpu_seconds(), time.monotonic()
    await asyncio.gather(*(loop() for _ in range(concurrency)))
    cpu = service.cpu_seconds() - cpu_before
    wall = time.monotonic() - started
    return {
        "sign_ins": done,
        "errors": failed,
        "seconds": round(wall, 3),
        "server_cpu_seconds": round(cpu, 3),
        "sign_ins_per_server_cpu_second": round(done / cpu, 1) if cpu > 0 else None,
    }


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    folder = temp_folder("authgate-passkeys-")
    url = await fresh_database(args.admin_url)
    try:
        async with FakeIdP() as fake:
            config = passkeys_config(folder, fake, url)
            config_file = write_config(folder, config)
            migrate(config_file)
            async with (
                ServiceProcess(config_file, taskset_cpu=0) as service,
                SignInDriver(fake, connections=args.concurrency) as driver,
                aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
            ):
                base = service.url
                users = [FakeUser(sub=f"bench-{i}") for i in range(args.users)]
                authenticators = await with_passkeys(driver, http, base, users)

                async def with_passkey() -> bool:
                    return await passkey_sign_in(http, base, random.choice(authenticators))

                async def with_provider() -> bool:
                    result = await driver.complete(base, "google", user=random.choice(users))
                    return result.signed_in

                for warm in (with_passkey, with_provider):  # first-use costs out of the figures
                    await warm()
                passkeys = await measured(service, args.seconds, args.concurrency, with_passkey)
                provider = await measured(service, args.seconds, args.concurrency, with_provider)
            raws: dict[str, dict[str, Any] | None] = dict.fromkeys(RAW_POOLS)
            for baseline, pool in ({} if args.no_raw else RAW_POOLS).items():
                # The floor on the same database and passkeys, pinned as authgate was.
                raw_file, command = floor_server(folder, config, pool)
                async with (
                    ServiceProcess(raw_file, taskset_cpu=0, command=command) as floor,
                    aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
                ):

                    async def on_floor() -> bool:
                        return await passkey_sign_in(http, floor.url, random.choice(authenticators))

                    await on_floor()
                    raws[baseline] = await measured(floor, args.seconds, args.concurrency, on_floor)
    finally:
        await drop_database(args.admin_url, url)
    ratio = None
    if passkeys["sign_ins_per_server_cpu_second"] and provider["sign_ins_per_server_cpu_second"]:
        ratio = round(
            passkeys["sign_ins_per_server_cpu_second"] / provider["sign_ins_per_server_cpu_second"],
            2,
        )
    ours = passkeys["sign_ins_per_server_cpu_second"]

    def over(raw: dict[str, Any] | None) -> float | None:
        floor = raw["sign_ins_per_server_cpu_second"] if raw else None
        return round(ours / floor, 3) if ours and floor else None

    return {
        "database": "postgres",
        "users": args.users,
        "concurrency": args.concurrency,
        "passkeys": passkeys,
        "provider": provider,
        "passkey_over_provider": ratio,
        "raw_floor": raws["raw"],  # on authgate's own pool
        "passkey_over_raw_floor": over(raws["raw"]),
        "raw_floor_asyncpg": raws["raw-asyncpg"],  # on asyncpg's pool
        "passkey_over_raw_floor_asyncpg": over(raws["raw-asyncpg"]),
        "target_passkey_sign_ins_per_server_cpu_second": TARGET,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--no-raw", action="store_true", help="skip the raw floor")
    parser.add_argument("--quick", action="store_true", help="--seconds 2 --users 5")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.users = 2.0, 5
    with pinned_to(1):
        report = asyncio.run(bench(args))
    print(json.dumps(report, indent=2))
    p, v = report["passkeys"], report["provider"]
    print(
        f"passkey sign-ins: {p['sign_ins_per_server_cpu_second']} per server CPU second "
        f"(target {TARGET}); provider sign-ins: {v['sign_ins_per_server_cpu_second']}; "
        f"passkey/provider {report['passkey_over_provider']}",
        file=sys.stderr,
    )
    failed = p["errors"] or v["errors"]
    for key, pool in (("raw_floor", "authgate"), ("raw_floor_asyncpg", "asyncpg")):
        raw = report[key]
        if raw is not None:
            print(
                f"raw floor (aiohttp + asyncpg + fido2, hand-written) on {pool}'s pool: "
                f"{raw['sign_ins_per_server_cpu_second']} per server CPU second; "
                f"authgate/floor {report['passkey_over_' + key]}",
                file=sys.stderr,
            )
            failed = failed or raw["errors"]
    return 0 if not failed and p["sign_ins"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
