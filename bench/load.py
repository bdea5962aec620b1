"""A load generator of our own against a real ``authgate serve``.

Loopback only; bounded in time (``--seconds``) and in count (``--max-requests``); stops by
itself. It starts the fake identity provider in this process, a fresh PostgreSQL database
(created on ``--admin-url``, migrated with ``authgate migrate``, dropped at the end) or a SQLite
file, and one ``authgate serve`` pinned to CPU 0 (this process takes CPU 1). Then workers loop:

* a complete sign-in: initiation, the provider's page (the fake), the callback with its
  database writes; ``intent=register`` of a new user until ``--users`` exist, then logins of
  known users at random;
* ``--reads`` authenticated ``GET /v1/account/providers`` with the session token it returned.

Every answer other than the expected one is an error. The server's resident memory (VmRSS) is
sampled every second; growth is the mean of the last ``--window`` seconds over the first
``--window`` seconds of the measured period. A warm-up comes first: ``--warmup`` seconds and
at least ``--warmup-sign-ins`` sign-ins (default: the size of the server's cache of verified
session tokens plus 500), so that bounded caches are full before memory is compared.

    .venv/bin/python bench/load.py                    # the recorded run: 60 s on PostgreSQL
    .venv/bin/python bench/load.py --seconds 10 --window 3 --warmup 3    # CI-sized

Prints a JSON report (``--json FILE`` writes it too).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import asyncpg
import attrs

from authgate.adapters.jose import session_tokens as sessions_jwt
from bench import profiling
from bench.harness import (
    ServiceProcess,
    SignInDriver,
    SignInError,
    migrate,
    service_config,
    temp_folder,
    write_config,
)
from bench.raw_pool import BASELINES as RAW_POOLS
from tests.fakeidp import FakeIdP, FakeUser

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
RAW_SIGNIN_SERVER = Path(__file__).resolve().parent / "raw_signin_server.py"
MAX_WARMUP_SECONDS = 120.0
VERIFIED_CACHE_SIZE: int = getattr(sessions_jwt, "VERIFIED_CACHE_SIZE", 0)


@attrs.define
class Settings:
    seconds: float = 60.0
    warmup: float = 5.0
    # and at least this many sign-ins first: the server's bounded caches (the verified session
    # tokens: one entry per session used) fill during the warm-up, not the measured period
    warmup_sign_ins: int = VERIFIED_CACHE_SIZE + 500
    window: float = 10.0
    concurrency: int = 8
    users: int = 2000
    reads: int = 3
    max_requests: int = 2_000_000
    database: str = "postgres"  # or "sqlite"
    admin_url: str = DEFAULT_ADMIN_URL
    database_url: str | None = None  # an already migrated database (tests)
    pin: bool = True
    profile_to: Path | None = None  # py-spy samples of the measured period (bench/profiling)
    # "authgate", or "raw" / "raw-asyncpg": bench/raw_signin_server.py on the same config
    # (sign-ins only) on authgate's pool / asyncpg's (bench/raw_pool.py)
    server: str = "authgate"


def cpu_split(pid: int) -> tuple[float, float]:
    """User and system CPU seconds a process has used so far (/proc/PID/stat fields 14, 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / ticks, int(fields[12]) / ticks


async def backend_cpu(url: str) -> dict[int, float]:
    """CPU seconds (user + system) used so far by each PostgreSQL backend connected to the
    run's database, by process id (PostgreSQL on this machine: /proc). A server's statements
    cost CPU there too, so a sign-in's figure counts them beside the server's own."""
    conn = await asyncpg.connect(url)
    try:
        pids = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
    finally:
        await conn.close()
    used: dict[int, float] = {}
    for row in pids:
        try:
            user, system = cpu_split(int(row["pid"]))
        except (OSError, ValueError, IndexError):  # gone meanwhile, or not on this machine
            continue
        used[int(row["pid"])] = user + system
    return used


def backend_cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """The backends' CPU seconds between two readings (a backend that appeared meanwhile
    counts whole; one that left is lost, which the runs avoid: their pools keep connections)."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


async def table_rows(url: str) -> dict[str, int]:
    """How many rows a sign-in's tables hold (what the server wrote, checked per sign-in)."""
    conn = await asyncpg.connect(url)
    try:
        tables = ("accounts", "identities", "sessions", "sign_in_events", "sign_in_states")
        return {t: int(await conn.fetchval(f"SELECT count(*) FROM {t}")) for t in tables}
    finally:
        await conn.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


@attrs.define
class Recorder:
    """Latencies (seconds) per kind, errors, and the measurement window."""

    measuring: bool = False
    latencies: dict[str, list[float]] = attrs.field(factory=dict)
    counts: dict[str, int] = attrs.field(factory=dict)
    errors: list[str] = attrs.field(factory=list)
    requests: int = 0

    def record(self, kind: str, seconds: float) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.measuring:
            self.latencies.setdefault(kind, []).append(seconds)

    def error(self, text: str) -> None:
        if len(self.errors) < 1000:
            self.errors.append(text)

    def summary(self, measured_seconds: float) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kind, values in sorted(self.latencies.items()):
            out[kind] = {
                "count": len(values),
                "per_second": round(len(values) / measured_seconds, 1),
                "p50_ms": round(percentile(values, 50) * 1000, 2),
                "p99_ms": round(percentile(values, 99) * 1000, 2),
                "max_ms": round(max(values) * 1000, 2),
            }
        return out


class Workload:
    def __init__(self, settings: Settings, driver: SignInDriver, base: str) -> None:
        self.settings = settings
        self.driver = driver
        self.base = base
        self.recorder = Recorder()
        self.known: list[str] = []
        self.next_user = 0
        self.deadline = 0.0
        self.signed_in = 0

    def _pick_user(self) -> tuple[FakeUser, str]:
        if self.next_user < self.settings.users:
            self.next_user += 1
            sub = f"load-{self.next_user}"
            return FakeUser(sub=sub, email=f"{sub}@example.com"), "register"
        sub = random.choice(self.known)
        return FakeUser(sub=sub, email=f"{sub}@example.com"), "login"

    def _more(self) -> bool:
        return time.monotonic() < self.deadline and self.recorder.requests < (
            self.settings.max_requests
        )

    async def sign_in(self) -> str | None:
        user, intent = self._pick_user()
        started = time.perf_counter()
        try:
            details, binding = await self.driver.begin(self.base, "google", intent=intent)
            began = time.perf_counter()
            back = await self.driver.fake.authorize(details["authorizationUrl"], user=user)
            at_callback = time.perf_counter()
            result = await self.driver.callback(self.base, "google", back.params, binding=binding)
        except (TimeoutError, SignInError, OSError, aiohttp.ClientError) as e:
            self.recorder.error(f"sign-in {intent}: {type(e).__name__}: {e}")
            return None
        finally:
            self.recorder.requests += 3
        done = time.perf_counter()
        if not result.signed_in:
            self.recorder.error(f"callback {intent}: {result.status} {result.location}")
            return None
        self.recorder.record("initiation", began - started)
        self.recorder.record("callback", done - at_callback)
        self.recorder.record(f"sign_in_{intent}", done - started)
        if intent == "register":
            self.known.append(user.sub)
        self.signed_in += 1
        return result.session

    async def read(self, token: str) -> None:
        started = time.perf_counter()
        try:
            status, body = await self.driver.linked_providers(self.base, token)
        except (TimeoutError, OSError, aiohttp.ClientError) as e:
            self.recorder.error(f"providers: {type(e).__name__}: {e}")
            return
        finally:
            self.recorder.requests += 1
        if status != 200 or not body.get("providers"):
            self.recorder.error(f"providers: {status} {str(body)[:200]}")
            return
        self.recorder.record("providers_read", time.perf_counter() - started)

    async def worker(self) -> None:
        while self._more():
            token = await self.sign_in()
            if token is None:
                await asyncio.sleep(0.05)
                continue
            for _ in range(self.settings.reads):
                if not self._more():
                    break
                await self.read(token)


@contextlib.asynccontextmanager
async def database(settings: Settings, folder: Path) -> AsyncIterator[tuple[str, bool]]:
    """(database URL, needs migrating) for the run; a PostgreSQL database is dropped after."""
    if settings.database_url is not None:
        yield settings.database_url, False
        return
    if settings.database == "sqlite":
        yield f"sqlite:///{folder / 'authgate.db'}", False
        return
    name = f"authgate_load_{os.getpid()}_{int(time.time())}"
    admin = await asyncpg.connect(settings.admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield settings.admin_url.rsplit("/", 1)[0] + f"/{name}", True
    finally:
        admin = await asyncpg.connect(settings.admin_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


def _trim_fake(fake: FakeIdP) -> None:
    """The fake records every request; a long run needs none of that history."""
    for provider in fake.providers.values():
        provider.requests.clear()
        provider.codes = {k: v for k, v in provider.codes.items() if not v.used}
        provider.access_tokens.clear()


async def run(settings: Settings, folder: Path | None = None) -> dict[str, Any]:
    """One load run; returns the report (``errors`` must be empty for a pass)."""
    folder = folder or temp_folder("authgate-load-")
    with pinned_to(1 if settings.pin else None):
        return await _run(settings, folder)


@contextlib.contextmanager
def pinned_to(cpu: int | None) -> Iterator[None]:
    """This process on one CPU for the block (the server gets the other); restored after."""
    if cpu is None or not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


async def _run(settings: Settings, folder: Path) -> dict[str, Any]:
    async with FakeIdP() as fake, database(settings, folder) as (url, fresh):
        config = service_config(
            folder,
            fake,
            database_url=url,
            overrides={
                # one client address sends every start and callback: the limits are not measured
                "ratelimit": {"callback": "100000000/minute", "initiation": "100000000/minute"},
                "database": {"pool_max_size": 10},
            },
        )
        config_file = write_config(folder, config)
        if fresh:
            await asyncio.to_thread(migrate, config_file)
        pin = 0 if settings.pin and (os.cpu_count() or 1) > 1 else None
        command = None
        if settings.server in RAW_POOLS:
            command = [sys.executable, str(RAW_SIGNIN_SERVER), "--config", str(config_file)]
            command += ["--pool", RAW_POOLS[settings.server]]
        async with (
            ServiceProcess(config_file, taskset_cpu=pin, command=command) as service,
            SignInDriver(fake, connections=settings.concurrency * 2) as driver,
        ):
            workload = Workload(settings, driver, service.url)
            # until measuring starts: bounded by the longest warm-up, then by --seconds
            workload.deadline = time.monotonic() + MAX_WARMUP_SECONDS + settings.seconds
            rss: list[tuple[float, int]] = []
            workers = [
                asyncio.ensure_future(workload.worker()) for _ in range(settings.concurrency)
            ]
            began = time.monotonic()
            cpu_at_start = 0.0
            split_at_start = (0.0, 0.0)
            on_postgres = url.startswith("postgres")
            backends_at_start: dict[int, float] = {}
            spy: subprocess.Popen[bytes] | None = None
            measured_from = began + settings.warmup
            while time.monotonic() < workload.deadline and not all(w.done() for w in workers):
                await asyncio.sleep(1.0)
                now = time.monotonic()
                warm = now >= measured_from and (
                    workload.signed_in >= settings.warmup_sign_ins
                    or now - began >= MAX_WARMUP_SECONDS
                )
                if not workload.recorder.measuring and warm:
                    workload.recorder.measuring = True
                    workload.deadline = now + settings.seconds
                    cpu_at_start = service.cpu_seconds()
                    split_at_start = cpu_split(service.pid)
                    if on_postgres:
                        backends_at_start = await backend_cpu(url)
                    measured_from = now
                    if settings.profile_to is not None:
                        spy = profiling.record(
                            service.pid, max(1, settings.seconds - 2), settings.profile_to
                        )
                if workload.recorder.measuring:
                    rss.append((now - measured_from, service.rss_kib()))
                _trim_fake(fake)
            cpu = service.cpu_seconds() - cpu_at_start
            database_cpu = (
                backend_cpu_between(backends_at_start, await backend_cpu(url))
                if on_postgres and workload.recorder.measuring
                else None
            )
            (user_end, system_end), (user_start, system_start) = (
                cpu_split(service.pid),
                split_at_start,
            )
            user, system = user_end - user_start, system_end - system_start
            await asyncio.gather(*workers)
            if spy is not None:
                await asyncio.to_thread(spy.wait)
            measured = max(time.monotonic() - measured_from, 1e-9)
            warmed = measured_from - began
            alive = service.running()
        written = await table_rows(url) if url.startswith("postgres") else None
    first = [kib for t, kib in rss if t <= settings.window]
    last = [kib for t, kib in rss if t >= (rss[-1][0] - settings.window)] if rss else []
    growth = (statistics.mean(last) / statistics.mean(first) - 1) if first and last else None
    rec = workload.recorder
    return {
        "settings": {
            k: str(v) if isinstance(v, Path) else v
            for k, v in attrs.asdict(settings).items()
            if k != "admin_url"
        },
        "database": "sqlite" if url.startswith("sqlite") else "postgres",
        "warmup_seconds": round(warmed, 1),
        "measured_seconds": round(measured, 1),
        "requests": rec.requests,
        "errors": rec.errors,
        "error_count": len(rec.errors),
        "server_alive": alive,
        "server_cpu_seconds": round(cpu, 2),
        "server_cpu_share": round(cpu / measured, 3),
        "server_cpu_user_seconds": round(user, 2),
        "server_cpu_system_seconds": round(system, 2),
        # PostgreSQL's backends serving the run's database, over the same period (None: SQLite)
        "database_cpu_seconds": round(database_cpu, 2) if database_cpu is not None else None,
        "server": settings.server,
        "table_rows": written,
        "latency": rec.summary(measured),
        "completed": dict(rec.counts),  # warm-up included
        "users_registered": len(workload.known),
        "rss_kib_first_window": round(statistics.mean(first)) if first else None,
        "rss_kib_last_window": round(statistics.mean(last)) if last else None,
        "rss_growth": round(growth, 4) if growth is not None else None,
        "rss_samples": rss,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--warmup-sign-ins", type=int, default=VERIFIED_CACHE_SIZE + 500)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--reads", type=int, default=3)
    parser.add_argument("--max-requests", type=int, default=2_000_000)
    parser.add_argument("--database", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args()
    settings = Settings(
        seconds=args.seconds,
        warmup=args.warmup,
        warmup_sign_ins=args.warmup_sign_ins,
        window=args.window,
        concurrency=args.concurrency,
        users=args.users,
        reads=args.reads,
        max_requests=args.max_requests,
        database=args.database,
        admin_url=args.admin_url,
    )
    report = asyncio.run(run(settings))
    shown = {k: v for k, v in report.items() if k != "rss_samples"}
    text = json.dumps(shown, indent=2)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    ok = not report["errors"] and report["server_alive"] and (report["rss_growth"] or 0) < 0.10
    print("PASS" if ok else "FAIL", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
