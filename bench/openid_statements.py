"""SQL statements and round trips per OpenID Provider request on PostgreSQL.

``authgate serve`` runs on a fresh PostgreSQL database through :func:`counting` (this file run
as ``--serve``), which adds asyncpg's query logger to every connection the service opens and
notes each statement it sends (``BEGIN`` and ``COMMIT`` included: asyncpg sends them as
statements too), the statements of a request's task apart from the service's background work
(outbox deliveries, purges). SIGUSR1 starts a count; SIGUSR2 writes it to a file. Each
operation is sent ``--operations`` times, one at a time, after a warm-up, and counted alone:

* ``authorize``: ``GET /oauth2/authorize`` with a live session (single sign-on, PKCE, a
  first-party client: no consent page) to the redirect with a code;
* ``token (code)``: the code redeemed at ``/oauth2/token`` (ID token, access token, refresh
  token); ``authorize`` and ``token (code)`` together are the code flow;
* ``refresh``: ``grant_type=refresh_token``, the token rotated;
* ``userinfo``: ``GET /oauth2/userinfo`` with the access token;
* ``introspection (access token)`` and ``introspection (refresh token)``: ``POST
  /oauth2/introspect`` by the introspecting client.

A round trip is one message exchange with the server: asyncpg sends a statement whose
prepared form it holds (its statement cache) as one exchange, and prepares an unknown one first
in an exchange of its own. The count reports the preparations seen during the measured batch
(none once warmed up: then round trips = statements); the session liveness cache
(``session.live_cache``) is warm, as in steady state.

    .venv/bin/python bench/openid_statements.py                 # 50 of each
    .venv/bin/python bench/openid_statements.py --quick         # 10 of each

Needs PostgreSQL (``--admin-url``). Not a timing: the counts do not depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import os
import shutil
import signal
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import asyncpg
from aiohttp import web

from bench.harness import (
    ServiceProcess,
    free_port,
    migrate,
    mint_session,
    service_config,
    temp_folder,
    write_config,
)
from bench.load import DEFAULT_ADMIN_URL
from bench.openid_bench import CLIENTS, INTROSPECTOR_SECRET, ISSUER, Browser, basic, seed

IN_REQUEST = contextvars.ContextVar("in_request", default=False)
"""Set in a request's task: what its statements count against, not the background's."""


def counting(count_file: str, argv: list[str]) -> int:
    """``authgate ARGV`` with every statement of its PostgreSQL connections noted: SIGUSR1
    starts a count, SIGUSR2 writes it (JSON) to ``count_file``."""
    sent: list[str] = []
    background: list[str] = []
    prepared = [0]
    # asyncpg's and aiohttp's internals, patched in this process only (typed as Any)
    driver: Any = asyncpg
    connection_class: Any = asyncpg.Connection
    application_class: Any = web.Application
    connect = driver.connect
    get_statement = connection_class._get_statement
    handle = application_class._handle

    def log(record: Any) -> None:
        # asyncpg calls a query logger with call_soon, in a copy of the statement's context
        (sent if IN_REQUEST.get() else background).append(record.query)

    async def noted(*args: Any, **kwargs: Any) -> Any:
        conn = await connect(*args, **kwargs)
        conn.add_query_logger(log)
        return conn

    async def preparing(self: Any, *args: Any, **kwargs: Any) -> Any:
        cached = len(self._stmt_cache)
        statement = await get_statement(self, *args, **kwargs)
        if len(self._stmt_cache) > cached and IN_REQUEST.get():  # prepared: a round trip
            prepared[0] += 1
        return statement

    async def handling(self: web.Application, request: web.Request) -> Any:
        IN_REQUEST.set(True)  # in this request's task (and what it starts) only
        return await handle(self, request)

    def start(_signum: int, _frame: object) -> None:
        sent.clear()
        background.clear()
        prepared[0] = 0

    def write(_signum: int, _frame: object) -> None:
        counts = {"statements": sent, "prepared": prepared[0], "background": background}
        Path(count_file).write_text(json.dumps(counts))

    driver.connect = noted  # what the pool calls to open a connection
    connection_class._get_statement = preparing
    application_class._handle = handling
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, write)
    from authgate.entrypoints.cli import main

    return main(argv)


def shape(query: str) -> str:
    """A statement's first words, enough to tell it (``SELECT ... FROM oauth_codes``)."""
    words = " ".join(query.split())
    if words.startswith(("BEGIN", "COMMIT", "ROLLBACK")):
        return words.split()[0].rstrip(";")
    head, _, rest = words.partition(" FROM ")
    if rest and head.startswith("SELECT"):
        return "SELECT ... FROM " + rest.split()[0]
    return words[:60]


async def counted(
    server: ServiceProcess, out: Path, times: int, step: Callable[[], Awaitable[None]]
) -> dict[str, Any]:
    """Statements per ``step`` over ``times`` of them, one at a time."""
    await step()  # warm: every statement of this step prepared
    await asyncio.to_thread(out.unlink, missing_ok=True)
    server.signal(signal.SIGUSR1)
    await asyncio.sleep(0.2)
    for _ in range(times):
        await step()
    await asyncio.sleep(0.3)  # asyncpg calls query loggers soon after a statement
    server.signal(signal.SIGUSR2)
    text = ""
    for _ in range(100):
        await asyncio.sleep(0.05)
        text = await asyncio.to_thread(_read, out)
        if text:
            break
    found = json.loads(text)
    statements: list[str] = found["statements"]
    kinds = Counter(shape(q) for q in statements)
    return {
        "statements": round(len(statements) / times, 2),
        "round_trips": round((len(statements) + found["prepared"]) / times, 2),
        "prepared_during_batch": found["prepared"],
        "transactions": round(kinds.get("BEGIN", 0) / times, 2),
        "by_statement": {k: round(v / times, 2) for k, v in sorted(kinds.items())},
        # the service's own background work (outbox deliveries, purges) meanwhile: not counted
        "background_meanwhile": dict(Counter(shape(q) for q in found["background"])),
    }


def _read(path: Path) -> str:
    """The file's text once written whole (its writer writes it in one go), else ``""``."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return ""
    try:
        json.loads(text)
    except ValueError:
        return ""
    return text


async def run(admin_url: str, times: int) -> dict[str, Any]:
    folder = temp_folder("authgate-bench-openid-sql-")
    name = f"authgate_bench_openid_sql_{os.getpid()}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    out = folder / "count.json"
    report: dict[str, Any] = {"operations": times}
    try:
        port = free_port()
        overrides = {
            "rest": {"public_url": ISSUER, "port": port},
            "clients": CLIENTS,
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
        command = [
            *(sys.executable, __file__, "--serve", str(out)),
            *("serve", "--config", str(config)),
        ]
        async with (
            ServiceProcess(config, port=port, command=command) as server,
            aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        ):
            session = await mint_session(folder / "session-keys.json", account, database_url=url)
            browser = Browser(http, server.url, session)
            codes: list[tuple[str, str]] = []
            tokens: list[dict[str, Any]] = []
            chain = [str((await browser.flow("openid offline_access"))["refresh_token"])]
            access = str((await browser.flow("openid offline_access"))["access_token"])

            async def authorize() -> None:
                codes.append(await browser.code("openid offline_access"))

            async def redeem() -> None:
                code, verifier = codes.pop()
                form = {
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": browser.redirect_uri,
                    "code_verifier": verifier,
                }
                tokens.append(await browser.token(form))

            async def refresh() -> None:
                chain[0] = await browser.refresh(chain[0])

            async def userinfo() -> None:
                async with http.get(
                    f"{server.url}/oauth2/userinfo", headers={"Authorization": f"Bearer {access}"}
                ) as response:
                    if response.status != 200:
                        raise RuntimeError(f"userinfo answered {response.status}")
                    await response.read()

            def introspect(token: Callable[[], str], hint: str) -> Callable[[], Awaitable[None]]:
                async def step() -> None:
                    async with http.post(
                        f"{server.url}/oauth2/introspect",
                        data={"token": token(), "token_type_hint": hint},
                        headers={"Authorization": basic("rs", INTROSPECTOR_SECRET)},
                    ) as response:
                        answer = await response.json(content_type=None)
                        if response.status != 200 or not answer.get("active"):
                            raise RuntimeError(f"introspection answered {answer}")

                return step

            await authorize()  # a code for redeem's warm-up step
            steps: dict[str, Callable[[], Awaitable[None]]] = {
                "authorize": authorize,
                "token (code)": redeem,
                "refresh": refresh,
                "userinfo": userinfo,
                "introspection (access token)": introspect(lambda: access, "access_token"),
                "introspection (refresh token)": introspect(lambda: chain[0], "refresh_token"),
            }
            for kind, step in steps.items():
                report[kind] = await counted(server, out, times, step)
                print(kind, report[kind], file=sys.stderr, flush=True)
    finally:
        admin = await asyncpg.connect(admin_url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
        shutil.rmtree(folder, ignore_errors=True)
    flow = [report["authorize"], report["token (code)"]]
    report["code flow"] = {
        key: round(sum(part[key] for part in flow), 2)
        for key in ("statements", "round_trips", "transactions")
    }
    return report


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        return counting(sys.argv[2], sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--operations", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="10 of each")
    args = parser.parse_args()
    report = asyncio.run(run(args.admin_url, 10 if args.quick else args.operations))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
