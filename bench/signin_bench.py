"""Complete sign-ins per CPU second, the server's and PostgreSQL's, against a hand-written floor
measured in the same run (target: authgate at least 0.95 of the floor).

Drives only complete sign-ins (initiation, the fake provider's authorize step, the callback:
token request, ID token verification against the cached JWKS, account write or last-login
update, sign-in event, session record, session JWT) through bench/load.py's workload against
one ``authgate serve`` pinned to CPU 0 on PostgreSQL; the load generator and the fake provider
(it signs an RS256 ID token per sign-in) share CPU 1.

Two phases, each on a fresh database and server, so that each kind is measured alone:

* registrations: every sign-in registers a new user (``intent=register``), warm-up included;
* logins: ``--users`` users register during the warm-up, then every measured sign-in is a
  login of one of them (``intent=login``) at random.

The raw floor: each phase runs twice, on a fresh database each time with the same settings
and pinning, first against authgate, then against bench/raw_signin_server.py (a hand-written
aiohttp + asyncpg server doing the same protocol work per sign-in with no framework; its
docstring lists what it skips), on authgate's own pool (bench/raw_pool.py), then the same
floor on asyncpg's pool (``raw-asyncpg``). Each phase reports the three servers and the ratios
authgate/raw and authgate/raw-asyncpg of sign-ins per server CPU second, so a figure measured
on this shared machine (whose speed varies within a day) comes with the floor measured in the
same run (``--no-raw``: authgate alone). After each run the rows written are counted: one
session and one event per sign-in, one account and one identity per registration, no pending
sign-in left; a mismatch is an error.

"Per CPU second" is sign-ins per second of the CPU time (user + system, /proc/PID/stat) of the
server and of the PostgreSQL backends serving the run's database, over the measured period: a
server that moves work into its statements does not look cheaper for it, and the figure does
not depend on whether the load generator kept the server's core busy. "Per server CPU second"
(the server's own CPU alone) is reported beside it. The callback's latency (p50/p99) is the
browser's view of the callback request. With ``--profile`` (py-spy, in the dev lock:
``scripts/bootstrap dev``), each measured period is sampled and the server's CPU split into
categories (bench/profiling.py).

    .venv/bin/python bench/signin_bench.py --profile     # the recorded run (~2 min)
    .venv/bin/python bench/signin_bench.py --seconds 3 --users 50   # a smoke run
    .venv/bin/python bench/signin_bench.py --quick                  # the same smoke run
    .venv/bin/python bench/signin_bench.py --seconds 15             # with the raw floor
    .venv/bin/python bench/signin_bench.py --seconds 10 --rounds 3  # alternating, medians
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import profiling
from bench.harness import temp_folder
from bench.load import DEFAULT_ADMIN_URL, Settings, run
from bench.raw_pool import BASELINES as RAW_POOLS

# authgate's sign-ins per CPU second (server and PostgreSQL) over the raw floor's, each kind
RATIO_TARGET = 0.95
PHASES = ("registrations", "logins")
# A registration run's user count: never reached, so every sign-in registers.
EVERYONE_NEW = 10**9


def written_mismatches(report: dict[str, Any]) -> list[str]:
    """What the server's rows say it did not write (PostgreSQL; empty when all is there)."""
    rows = report.get("table_rows")
    if rows is None:
        return []
    done = report["completed"]
    registered = done.get("sign_in_register", 0)
    signed_in = registered + done.get("sign_in_login", 0)
    expected = {
        "accounts": registered,
        "identities": registered,
        "sessions": signed_in,
        "sign_in_events": signed_in,
        "sign_in_states": 0,
    }
    return [
        f"{table}: {rows[table]} rows, expected {n}"
        for table, n in expected.items()
        if rows[table] != n
    ]


def summarize(report: dict[str, Any], kind: str) -> dict[str, Any]:
    """One phase's figures: sign-ins of ``kind`` per server CPU second, the latencies."""
    latency = report["latency"]
    mismatches = written_mismatches(report)
    measured = latency.get(f"sign_in_{kind}", {"count": 0})
    count = int(measured["count"])
    seconds = report["measured_seconds"]
    cpu = report["server_cpu_seconds"]
    database_cpu = report.get("database_cpu_seconds")
    total_cpu = cpu + database_cpu if database_cpu is not None else None
    callback = latency.get("callback", {})
    return {
        "errors": report["error_count"] + len(mismatches),
        "error_samples": (mismatches + report["errors"])[:5],
        "sign_ins": count,
        "other_sign_ins": sum(
            latency[k]["count"] for k in ("sign_in_register", "sign_in_login") if k in latency
        )
        - count,
        "sign_ins_per_second": round(count / seconds, 1),
        "server_cpu_seconds": cpu,
        "server_cpu_share": report["server_cpu_share"],
        "server_cpu_user_seconds": report["server_cpu_user_seconds"],
        "server_cpu_system_seconds": report["server_cpu_system_seconds"],
        "sign_ins_per_server_cpu_second": round(count / cpu, 1) if cpu else None,
        "database_cpu_seconds": database_cpu,
        # the headline: the server's and PostgreSQL's CPU together (server alone on SQLite)
        "sign_ins_per_cpu_second": (
            round(count / total_cpu, 1) if total_cpu else (round(count / cpu, 1) if cpu else None)
        ),
        "callback_p50_ms": callback.get("p50_ms"),
        "callback_p99_ms": callback.get("p99_ms"),
        "latency": {
            k: latency[k] for k in (f"sign_in_{kind}", "initiation", "callback") if k in latency
        },
    }


async def phase(
    name: str, args: argparse.Namespace, folder: Path, server: str = "authgate"
) -> dict[str, Any]:
    registering = name == "registrations"
    folded = folder / f"{name}.folded"
    profile = args.profile and server == "authgate"
    settings = Settings(
        seconds=args.seconds,
        warmup=3.0,
        # logins: every user registered before measuring starts
        warmup_sign_ins=0 if registering else args.users,
        window=min(10.0, args.seconds / 3),
        concurrency=args.concurrency,
        users=EVERYONE_NEW if registering else args.users,
        reads=0,
        database=args.database,
        admin_url=args.admin_url,
        profile_to=folded if profile else None,
        server=server,
    )
    run_folder = folder / name if server == "authgate" else folder / f"{name}-{server}"
    run_folder.mkdir(exist_ok=True)
    report = await run(settings, run_folder)
    out = summarize(report, "register" if registering else "login")
    if profile:
        trimmed = _without_entry_frames(folded)
        out["server_cpu_by_category"] = profiling.shares(trimmed)
        out["top_self"] = profiling.top_functions(trimmed, 15)
    return out


def alternating(name: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """``args.rounds`` runs of each server, alternating (authgate first in even rounds, the raw
    floor first in odd ones), each on a fresh database and server: the machine's speed drifts
    over minutes here, and this spreads the drift over both. The phase's figures are
    authgate's median run with the floor's median run, the ratio the median of the rounds'."""
    servers = ("authgate", *RAW_POOLS)
    runs: dict[str, list[dict[str, Any]]] = {server: [] for server in servers}
    for number in range(args.rounds):
        order = servers if number % 2 == 0 else tuple(reversed(servers))
        for server in order:
            sub = folder / f"round-{number}"
            sub.mkdir(exist_ok=True)
            runs[server].append(asyncio.run(phase(name, args, sub, server=server)))
    ratios = sorted(
        round(a["sign_ins_per_cpu_second"] / r["sign_ins_per_cpu_second"], 3)
        for a, r in zip(runs["authgate"], runs["raw"], strict=True)
        if a["sign_ins_per_cpu_second"] and r["sign_ins_per_cpu_second"]
    )
    merged = with_raw_floor(_median_run(runs["authgate"]), _median_run(runs["raw"]))
    merged = with_raw_floor(merged, _median_run(runs["raw-asyncpg"]), "raw-asyncpg")
    merged["errors"] = sum(run["errors"] for run in runs["authgate"])
    for baseline in RAW_POOLS:
        merged[baseline]["errors"] = sum(run["errors"] for run in runs[baseline])
    merged["ratio_to_raw"] = ratios[len(ratios) // 2] if ratios else None
    merged["rounds"] = [
        {"authgate": a["sign_ins_per_cpu_second"], "raw": r["sign_ins_per_cpu_second"]}
        for a, r in zip(runs["authgate"], runs["raw"], strict=True)
    ]
    merged["round_ratios"] = ratios
    return merged


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ranked = sorted(runs, key=lambda run: run["sign_ins_per_cpu_second"] or 0.0)
    return dict(ranked[len(ranked) // 2])


def with_raw_floor(
    authgate: dict[str, Any], raw: dict[str, Any], baseline: str = "raw"
) -> dict[str, Any]:
    """authgate's phase with the raw floor's figures under ``baseline`` (``raw`` on authgate's
    pool, ``raw-asyncpg`` on asyncpg's) and the ratios authgate/floor (per CPU second of the
    server and PostgreSQL, the headline, and of the server alone): ``ratio_to_raw``, or
    ``ratio_to_raw_asyncpg``."""
    ours, floor = authgate["sign_ins_per_cpu_second"], raw["sign_ins_per_cpu_second"]
    ours_alone = authgate["sign_ins_per_server_cpu_second"]
    floor_alone = raw["sign_ins_per_server_cpu_second"]
    key = "ratio_to_" + baseline.replace("-", "_")
    return {
        **authgate,
        baseline: raw,
        key: round(ours / floor, 3) if ours and floor else None,
        f"{key}_server_cpu": (
            round(ours_alone / floor_alone, 3) if ours_alone and floor_alone else None
        ),
    }


def _without_entry_frames(folded: Path) -> Path:
    """The samples without the frames every stack starts with (the CLI, ``serve`` and the
    event loop's run_forever, or aiohttp's run_app under uvloop, whose loop is C code without
    frames of its own): ``serve`` lives in entrypoints/rest/, so with it every sample the
    other rules miss (the event loop, socket reads) would count as REST layer. A sample of the
    loop itself (uvloop's C code: polling, socket reads and writes) is left as the frame
    ``event loop (asyncio/uvloop)``."""
    lines = []
    for line in folded.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        cut = next(
            (
                i + 1
                for i, f in reversed(list(enumerate(frames)))
                if f.startswith(("BaseEventLoop.run_forever", "run_app (aiohttp/web.py"))
            ),
            0,
        )
        rest = frames[cut:] or ["event loop (asyncio/uvloop)"]
        lines.append(";".join(rest) + " " + count)
    trimmed = folded.with_suffix(".trimmed.folded")
    trimmed.write_text("\n".join(lines) + "\n")
    return trimmed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured, per phase")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--users", type=int, default=500, help="registered before the logins")
    parser.add_argument("--database", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--phase", choices=PHASES, action="append", help="default: both")
    parser.add_argument("--profile", action="store_true", help="authgate's runs only")
    parser.add_argument("--no-raw", action="store_true", help="skip the raw floor")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="runs per server and phase, authgate and the raw floor alternating (the order "
        "swapped every round); the medians are reported",
    )
    parser.add_argument("--quick", action="store_true", help="--seconds 3 --users 50")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.users = 3.0, 50
    if args.rounds < 1 or (args.rounds > 1 and (args.no_raw or args.profile)):
        parser.error("--rounds takes a positive number, and more than one needs the raw floor")
    if args.profile and not profiling.available():
        print("py-spy is not installed: scripts/bootstrap dev", file=sys.stderr)
        return 2
    folder = temp_folder("authgate-bench-signin-")
    out: dict[str, Any] = {"database": args.database, "target_ratio_to_raw": RATIO_TARGET}
    phases = args.phase or PHASES
    for name in phases:
        if args.rounds > 1:
            out[name] = alternating(name, args, folder)
            continue
        out[name] = asyncio.run(phase(name, args, folder))
        if not args.no_raw:
            for baseline in RAW_POOLS:
                raw = asyncio.run(phase(name, args, folder, server=baseline))
                out[name] = with_raw_floor(out[name], raw, baseline)
    print(json.dumps(out, indent=2))
    for name in phases:
        ours = out[name]
        print(
            f"{name:14} {ours['sign_ins_per_cpu_second']} per CPU second (server and "
            f"PostgreSQL; server alone {ours['sign_ins_per_server_cpu_second']}), "
            f"callback p50 {ours['callback_p50_ms']} ms "
            f"p99 {ours['callback_p99_ms']} ms, errors {ours['errors']}, {_cpu_text(ours)}",
            file=sys.stderr,
        )
        if "rounds" in ours:
            print(
                f"{'  rounds':14} authgate/raw per CPU second: "
                + ", ".join(f"{r['authgate']}/{r['raw']}" for r in ours["rounds"])
                + f"; ratios {ours['round_ratios']} (median {ours['ratio_to_raw']})",
                file=sys.stderr,
            )
        for baseline, pool in RAW_POOLS.items():
            if baseline not in ours:
                continue
            raw, key = ours[baseline], "ratio_to_" + baseline.replace("-", "_")
            print(
                f"{'  raw floor':14} on {pool}'s pool {raw['sign_ins_per_cpu_second']} per CPU "
                f"second (server alone {raw['sign_ins_per_server_cpu_second']}), callback p50 "
                f"{raw['callback_p50_ms']} ms p99 {raw['callback_p99_ms']} ms, errors "
                f"{raw['errors']}, {_cpu_text(raw)}; authgate/{baseline} {ours[key]} "
                f"(target {RATIO_TARGET:g}; server alone {ours.get(key + '_server_cpu')})",
                file=sys.stderr,
            )
    failed = [
        n
        for n in phases
        if out[n]["errors"] or any(b in out[n] and out[n][b]["errors"] for b in RAW_POOLS)
    ]
    return 1 if failed else 0


def _cpu_text(phase: dict[str, Any]) -> str:
    return (
        f"server CPU {phase['server_cpu_seconds']} s (user {phase['server_cpu_user_seconds']}, "
        f"sys {phase['server_cpu_system_seconds']}), PostgreSQL CPU "
        f"{phase['database_cpu_seconds']} s"
    )


if __name__ == "__main__":
    raise SystemExit(main())
