"""Complete sign-ins per second per core (issue 5, bench 2).

Drives only complete sign-ins (initiation, the fake provider's authorize step, the callback:
token request, ID token verification against the cached JWKS, account write or last-login
update, sign-in event, session JWT) through bench/load.py's workload against one
``authgate serve`` pinned to CPU 0 on PostgreSQL; the load generator and the fake provider (it
signs an RS256 ID token per sign-in) share CPU 1. Registrations of new users until ``--users``
exist, then logins.

"Per core" is sign-ins per second of the server's own CPU time (user + system,
/proc/PID/stat), so it does not depend on whether the load generator kept the server's core
busy. With ``--profile`` (py-spy in the venv: ``.venv/bin/pip install py-spy``), the measured
period is sampled and the server's CPU is split into token verification, session token,
database, HTTP client (the provider calls), HTTP server, REST layer, access log, sign-in logic
and event loop (bench/profiling.py).

    .venv/bin/python bench/signin_bench.py --profile     # the recorded run (~40 s)
    .venv/bin/python bench/signin_bench.py --seconds 5   # a smoke run
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


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    latency = report["latency"]
    kinds = [k for k in ("sign_in_register", "sign_in_login") if k in latency]
    count = sum(latency[k]["count"] for k in kinds)
    seconds = report["measured_seconds"]
    cpu = report["server_cpu_seconds"]
    return {
        "database": report["database"],
        "errors": report["error_count"],
        "sign_ins": count,
        "sign_ins_per_second": round(count / seconds, 1),
        "server_cpu_share": report["server_cpu_share"],
        "sign_ins_per_server_cpu_second": round(count / cpu, 1) if cpu else None,
        "latency": {k: latency[k] for k in (*kinds, "initiation", "callback") if k in latency},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--users", type=int, default=1500)
    parser.add_argument("--database", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    folder = temp_folder("authgate-bench-signin-")
    folded = folder / "server.folded"
    if args.profile and not profiling.available():
        print("py-spy is not installed: .venv/bin/pip install py-spy", file=sys.stderr)
        return 2
    settings = Settings(
        seconds=args.seconds,
        warmup=3.0,
        warmup_sign_ins=0,  # no provider reads here: no session-token cache to fill
        window=min(10.0, args.seconds / 3),
        concurrency=args.concurrency,
        users=args.users,
        reads=0,
        database=args.database,
        admin_url=args.admin_url,
        profile_to=folded if args.profile else None,
    )
    report = asyncio.run(run(settings, folder))
    out = summarize(report)
    if args.profile:
        out["server_cpu_by_category"] = profiling.shares(folded)
        out["top_self"] = profiling.top_functions(folded, 12)
    print(json.dumps(out, indent=2))
    return 0 if not report["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
