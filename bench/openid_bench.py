"""The OpenID Provider's costs on PostgreSQL, against ``authgate serve`` as a process.

Three measurements on one database holding one account with a live authgate session, and one
first-party confidential client (``web``: no consent page, HTTP Basic at the token endpoint):

* ``code flow``: a browser with a live session (the ``session`` cookie) asks
  ``/oauth2/authorize`` for a code (PKCE S256, ``openid``), is redirected back with it at once
  (single sign-on), and the application redeems it at ``/oauth2/token``: an ID token and an
  access token (both RS256) and the writes of a redemption (the code spent, a token family,
  the session's client). Target: >= 1,000 flows per server CPU second.
* ``refresh``: the application rotates its refresh token (``grant_type=refresh_token``; each
  chain carries on with the token it got back). Target: >= 1,500 per server CPU second.
* ``introspection``: an introspecting client asks ``/oauth2/introspect`` about one access
  token, against bench/raw_introspection_server.py (aiohttp + asyncpg: the signature checked,
  the same two rows read, the same answer) twice (bench/raw_pool.py): ``raw`` on authgate's
  own pool, the fair floor, and ``raw-asyncpg`` on asyncpg's pool (its reset query off); the
  ratio to each is reported. Target: authgate/raw >= 0.8 in requests per server CPU second,
  measured side by side in alternating rounds, each server started for them (not the
  instance that served the flows and refreshes). The raw handler writes no access log;
  authgate writes one line per request by default, so a second authgate instance on the same
  database and keys, with ``rest.access_log: false``, runs in the same rounds: the
  like-for-like figure beside the default one.

"Per server CPU second" counts the server process's CPU (user + system, /proc) and that of
the PostgreSQL backends serving the run's database, over the measured period, as
bench/signin_bench.py does ("server alone" is reported beside it). The server is pinned to
CPU 0, the load generator to CPU 1. The flows and refreshes are driven through aiohttp's client
(stateful: every code and refresh token is used once); introspection through bench/httpload.py.

    .venv/bin/python bench/openid_bench.py            # the recorded run (~1.5 minutes)
    .venv/bin/python bench/openid_bench.py --quick    # a smoke run

``signature_ceiling`` in the report: RS256 signatures per CPU second on this machine, and the
token responses (two signatures each) that alone allow per CPU second, with nothing else
counted: the bound under which the flow and refresh figures stay while both tokens are RS256.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import hashlib
import json
import os
import secrets
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import asyncpg

from authgate.entrypoints.rest.eventloop import default_event_loop
from bench import profiling
from bench.harness import (
    ServiceProcess,
    free_port,
    migrate,
    mint_session,
    service_config,
    temp_folder,
    write_config,
)
from bench.httpload import closed_loop
from bench.load import DEFAULT_ADMIN_URL, backend_cpu, backend_cpu_between, cpu_split, pinned_to
from bench.raw_pool import BASELINES as RAW_POOLS

ISSUER = "https://api.example.com"
SECRET = "bench-web-secret-of-more-than-thirty-two-characters"
INTROSPECTOR_SECRET = "bench-introspector-secret-of-more-than-thirty-two"
REDIRECT = "https://web.example.com/cb"
CLIENTS: dict[str, Any] = {
    "web": {
        "name": "Web App",
        "type": "confidential",
        "secrets": [SECRET],
        "redirect_uris": [REDIRECT],
        "first_party": True,
    },
    "rs": {
        "name": "Resource server",
        "type": "confidential",
        "secrets": [INTROSPECTOR_SECRET],
        "redirect_uris": ["https://rs.example.com/cb"],
        "introspection": True,
    },
}
FLOW_TARGET = 1000.0
REFRESH_TARGET = 1500.0
INTROSPECTION_TARGET = 0.8
NO_LOG = "authgate, access log off"  # the introspection's like-for-like instance
SIGNATURES_PER_TOKEN_RESPONSE = 2  # the ID token and the RFC 9068 access token, both RS256


def rs256_ceiling(signatures: int = 400) -> dict[str, float]:
    """RS256 signatures per CPU second on this machine (joserfc, a 2048-bit key like the
    service's, a token response's claims), and what that alone allows: a flow and a refresh
    each sign two tokens, so neither can exceed half of it per CPU second whatever else they
    cost. Measured in this process, on the load generator's CPU (time.process_time)."""
    from joserfc import jwt
    from joserfc.jwk import RSAKey

    key = RSAKey.generate_key(2048, parameters={"kid": "bench"})
    claims = {
        "iss": ISSUER,
        "sub": str(uuid.uuid4()),
        "aud": "web",
        "iat": 1_800_000_000,
        "exp": 1_800_000_300,
        "sid": uuid.uuid4().hex,
        "scope": "openid offline_access",
        "jti": uuid.uuid4().hex,
    }
    jwt.encode({"alg": "RS256", "kid": "bench"}, claims, key)  # warm
    began = time.process_time()
    for _ in range(signatures):
        jwt.encode({"alg": "RS256", "kid": "bench"}, claims, key)
    per_second = signatures / (time.process_time() - began)
    return {
        "rs256_signatures_per_cpu_second": round(per_second, 1),
        "token_responses_per_cpu_second_at_most": round(
            per_second / SIGNATURES_PER_TOKEN_RESPONSE, 1
        ),
    }


def basic(client: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client}:{secret}".encode()).decode()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def seed(url: str) -> str:
    """One account with one linked identity; returns its id."""
    account = uuid.uuid4()
    now = dt.datetime.now(dt.UTC)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "INSERT INTO accounts (id, email, name, created_at) VALUES ($1, $2, $3, $4)",
            account,
            "bench@example.com",
            "Bench",
            now,
        )
        await conn.execute(
            "INSERT INTO identities (provider, subject, account_id, email, linked_at, "
            "is_primary) VALUES ($1, $2, $3, $4, $5, $6)",
            "google",
            "g-1",
            account,
            "bench@example.com",
            now,
            True,
        )
    finally:
        await conn.close()
    return str(account)


class Browser:
    """The browser with a live session and the application behind it, over aiohttp."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        base: str,
        session: str,
        *,
        client: str = "web",
        secret: str = SECRET,
        redirect_uri: str = REDIRECT,
    ) -> None:
        self.http = http
        self.base = base
        self.cookie = f"session={session}"
        self.client = client
        self.redirect_uri = redirect_uri
        self.token_auth = basic(client, secret)

    async def code(self, scope: str = "openid") -> tuple[str, str]:
        """A code by single sign-on, and its PKCE verifier."""
        verifier, challenge = pkce()
        query = {
            "response_type": "code",
            "client_id": self.client,
            "redirect_uri": self.redirect_uri,
            "scope": scope,
            "state": secrets.token_urlsafe(16),
            "nonce": secrets.token_urlsafe(16),
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        async with self.http.get(
            f"{self.base}/oauth2/authorize?{urlencode(query)}",
            headers={"Cookie": self.cookie, "Accept": "text/html"},
            allow_redirects=False,
        ) as response:
            await response.read()
            location = response.headers.get("Location", "")
            if response.status != 302 or not location.startswith(self.redirect_uri):
                raise RuntimeError(f"authorize answered {response.status} {location[:200]}")
        params = parse_qs(urlsplit(location).query)
        if "code" not in params:
            raise RuntimeError(f"no code: {location[:300]}")
        return params["code"][0], verifier

    async def token(self, form: dict[str, str]) -> dict[str, Any]:
        async with self.http.post(
            f"{self.base}/oauth2/token", data=form, headers={"Authorization": self.token_auth}
        ) as response:
            body = await response.json(content_type=None)
            if response.status != 200:
                raise RuntimeError(f"token answered {response.status}: {body}")
            assert isinstance(body, dict)
            return body

    async def flow(self, scope: str = "openid") -> dict[str, Any]:
        """A whole code flow: the tokens the application gets."""
        code, verifier = await self.code(scope)
        return await self.token(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.redirect_uri,
                "code_verifier": verifier,
            }
        )

    async def refresh(self, token: str) -> str:
        body = await self.token({"grant_type": "refresh_token", "refresh_token": token})
        return str(body["refresh_token"])


async def closed_workers(
    seconds: float, workers: int, step: Callable[[int], Awaitable[None]]
) -> tuple[int, float, list[float]]:
    """``workers`` loops calling ``step(worker)`` until ``seconds`` have passed: the steps
    done, the seconds taken, the latencies."""
    deadline = time.perf_counter() + seconds
    latencies: list[float] = []

    async def loop(worker: int) -> None:
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            await step(worker)
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(loop(w) for w in range(workers)))
    return len(latencies), time.perf_counter() - began, latencies


class CpuMeter:
    """The CPU seconds of a server process and of the PostgreSQL backends on its database."""

    def __init__(self, pid: int, url: str) -> None:
        self.pid, self.url = pid, url

    async def __aenter__(self) -> CpuMeter:
        self._server = sum(cpu_split(self.pid))
        self._backends = await backend_cpu(self.url)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server = sum(cpu_split(self.pid)) - self._server
        self.database = backend_cpu_between(self._backends, await backend_cpu(self.url))


def figures(count: int, seconds: float, latencies: list[float], meter: CpuMeter) -> dict[str, Any]:
    ordered = sorted(latencies)

    def pct(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000, 2)

    total = meter.server + meter.database
    return {
        "count": count,
        "per_second": round(count / seconds, 1),
        "server_cpu_seconds": round(meter.server, 2),
        "database_cpu_seconds": round(meter.database, 2),
        "server_cpu_share": round(meter.server / seconds, 2),
        "per_cpu_second": round(count / total, 1) if total else None,
        "per_server_alone_cpu_second": round(count / meter.server, 1) if meter.server else None,
        "p50_ms": pct(0.5) if ordered else None,
        "p99_ms": pct(0.99) if ordered else None,
    }


async def measure_flows(
    browser: Browser, server: ServiceProcess, url: str, seconds: float, workers: int
) -> dict[str, Any]:
    async def step(_: int) -> None:
        await browser.flow()

    await closed_workers(min(seconds, 2.0), workers, step)  # warm-up
    async with CpuMeter(server.pid, url) as meter:
        count, taken, latencies = await closed_workers(seconds, workers, step)
    return figures(count, taken, latencies, meter)


async def measure_refreshes(
    browser: Browser, server: ServiceProcess, url: str, seconds: float, workers: int
) -> dict[str, Any]:
    chains = [
        str((await browser.flow("openid offline_access"))["refresh_token"]) for _ in range(workers)
    ]

    async def step(worker: int) -> None:
        chains[worker] = await browser.refresh(chains[worker])

    await closed_workers(min(seconds, 2.0), workers, step)
    async with CpuMeter(server.pid, url) as meter:
        count, taken, latencies = await closed_workers(seconds, workers, step)
    return figures(count, taken, latencies, meter)


def introspection_request(port: int, token: str) -> bytes:
    body = urlencode({"token": token, "token_type_hint": "access_token"}).encode()
    head = [
        "POST /oauth2/introspect HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Accept: application/json",
        "Content-Type: application/x-www-form-urlencoded",
        f"Authorization: {basic('rs', INTROSPECTOR_SECRET)}",
        f"Content-Length: {len(body)}",
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def introspected(http: aiohttp.ClientSession, port: int, token: str) -> dict[str, Any]:
    request = introspection_request(port, token)
    head, _, body = request.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:])
    async with http.post(
        f"http://127.0.0.1:{port}/oauth2/introspect", data=body, headers=headers
    ) as response:
        answer = await response.json(content_type=None)
        if response.status != 200:
            raise RuntimeError(f"introspection answered {response.status}: {answer}")
        assert isinstance(answer, dict)
        return answer


async def measure_introspection(
    server: ServiceProcess, url: str, request: bytes, seconds: float, connections: int
) -> dict[str, Any]:
    async with CpuMeter(server.pid, url) as meter:
        result = await closed_loop(server.port, request, connections=connections, seconds=seconds)
    if result.errors:
        raise RuntimeError(f"{result.errors} errors, first: {result.first_error}")
    return figures(result.count, result.seconds, result.latencies, meter)


async def settle(url: str) -> None:
    """VACUUM ANALYZE the run's database between two measured figures: the thousands of rows
    one figure wrote would otherwise be vacuumed by autovacuum during the next one, whose
    backend is counted in that figure's database CPU (it connects to the run's database)."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    loop = default_event_loop()
    folder = temp_folder("authgate-bench-openid-")
    name = f"authgate_bench_openid_{os.getpid()}"
    admin = await asyncpg.connect(args.admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = args.admin_url.rsplit("/", 1)[0] + f"/{name}"
    report: dict[str, Any] = {"event_loop": loop, "workers": args.workers}
    try:
        overrides = {
            "rest": {"public_url": ISSUER},
            "clients": CLIENTS,
            # The token endpoint's limit per client (3000/minute by default) and the provider's
            # limits per address (all of the run comes from 127.0.0.1) would stop the run
            # within seconds; limits never reached keep the limiters' cost in the figures.
            "ratelimit": {
                key: "1000000000/minute"
                for key in ("token", "token_address", "authorize", "userinfo")
            },
        }
        config_file = write_config(
            folder, service_config(folder, None, database_url=url, overrides=overrides)
        )
        await asyncio.to_thread(migrate, config_file)
        account = await seed(url)
        authgate = ServiceProcess(config_file, taskset_cpu=0)
        async with (
            authgate,
            aiohttp.ClientSession(
                cookie_jar=aiohttp.DummyCookieJar(),
                connector=aiohttp.TCPConnector(limit=args.workers * 2),
            ) as http,
        ):
            session = await mint_session(folder / "session-keys.json", account, database_url=url)
            browser = Browser(http, authgate.url, session)
            report["code_flow"] = await measure_flows(
                browser, authgate, url, args.seconds, args.workers
            )
            await settle(url)
            report["refresh"] = await measure_refreshes(
                browser, authgate, url, args.seconds, args.workers
            )
            await settle(url)
            if args.profile:
                report["profile"] = await profile_flows(browser, authgate, folder, args)
            report["introspection"] = await introspection(
                http, browser, authgate, overrides, url, folder, loop, args
            )
    finally:
        admin = await asyncpg.connect(args.admin_url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    report["signature_ceiling"] = rs256_ceiling()
    report["targets"] = {
        "code_flow_per_cpu_second": FLOW_TARGET,
        "refresh_per_cpu_second": REFRESH_TARGET,
        "introspection_authgate/raw": INTROSPECTION_TARGET,
    }
    report["met"] = {
        "code_flow": (report["code_flow"]["per_cpu_second"] or 0) >= FLOW_TARGET,
        "refresh": (report["refresh"]["per_cpu_second"] or 0) >= REFRESH_TARGET,
        "introspection": report["introspection"]["authgate/raw"] >= INTROSPECTION_TARGET,
    }
    return report


async def profile_flows(
    browser: Browser, server: ServiceProcess, folder: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """Code flows, then refreshes, under py-spy (it slows the server): where the time goes."""
    chains = [
        str((await browser.flow("openid offline_access"))["refresh_token"])
        for _ in range(args.workers)
    ]

    async def flow(_: int) -> None:
        await browser.flow()

    async def refresh(worker: int) -> None:
        chains[worker] = await browser.refresh(chains[worker])

    out: dict[str, Any] = {}
    for kind, step in (("code_flow", flow), ("refresh", refresh)):
        folded = folder / f"{kind}.folded"
        spy = profiling.record(server.pid, 8, folded)
        await closed_workers(9.0, args.workers, step)
        await asyncio.to_thread(spy.wait)
        out[kind] = {
            "shares": profiling.shares(folded),
            "top_self": profiling.top_functions(folded, 15),
        }
    return out


async def introspection(
    http: aiohttp.ClientSession,
    browser: Browser,
    authgate: ServiceProcess,
    overrides: dict[str, Any],
    url: str,
    folder: Path,
    loop: str,
    args: argparse.Namespace,
) -> dict[str, Any]:
    access = str((await browser.flow("openid offline_access"))["access_token"])
    async with http.get(f"{authgate.url}/.well-known/jwks.json") as response:
        jwks = folder / "jwks.json"
        jwks.write_bytes(await response.read())
    raws = {
        baseline: ServiceProcess(
            authgate.config_file,
            taskset_cpu=0,
            port=raw_port,
            command=[
                *(sys.executable, str(Path(__file__).with_name("raw_introspection_server.py"))),
                *(str(raw_port), url, str(jwks), "rs", INTROSPECTOR_SECRET, loop, pool),
            ],
        )
        for baseline, pool in RAW_POOLS.items()
        for raw_port in [free_port()]
    }
    # Both authgate instances start for these rounds, as the raw handler does: the one that
    # served the flows and refreshes carries their state (a larger heap, fuller caches and
    # limiter windows), which the fresh raw server would not have to carry. Their files are
    # written now, each with ports free now: a port chosen long before may have become a
    # client connection's own in the meantime.
    instances = {"config-introspection.yaml": overrides}
    instances["config-no-access-log.yaml"] = {
        **overrides,
        "rest": {**overrides["rest"], "access_log": False},
    }
    fresh, quiet = (
        ServiceProcess(
            write_config(folder, service_config(folder, None, database_url=url, overrides=o), n),
            taskset_cpu=0,
        )
        for n, o in instances.items()
    )
    async with raws["raw"], raws["raw-asyncpg"], fresh, quiet:
        servers = {"authgate": fresh, NO_LOG: quiet, **raws}
        answers = {k: await introspected(http, s.port, access) for k, s in servers.items()}
        if not answers["authgate"].get("active") or any(
            answer != answers["raw"] for answer in answers.values()
        ):
            raise RuntimeError(f"the servers answer differently: {answers}")
        requests = {k: introspection_request(s.port, access) for k, s in servers.items()}
        for kind, server in servers.items():  # warm up (pools, caches)
            await measure_introspection(server, url, requests[kind], 1.0, args.connections)
        samples: dict[str, list[dict[str, Any]]] = {kind: [] for kind in servers}
        for r in range(args.rounds):
            order = list(servers) if r % 2 == 0 else list(reversed(servers))
            for kind in order:
                samples[kind].append(
                    await measure_introspection(
                        servers[kind], url, requests[kind], args.seconds, args.connections
                    )
                )

    def ratios(kind: str, key: str = "per_cpu_second", baseline: str = "raw") -> list[float]:
        return [
            round(a[key] / b[key], 3)
            for a, b in zip(samples[kind], samples[baseline], strict=True)
            if a[key] and b[key]
        ]

    def median(kind: str, key: str) -> float:
        return round(statistics.median(s[key] for s in samples[kind]), 2)

    keys = ("per_second", "per_cpu_second", "per_server_alone_cpu_second", "p50_ms", "p99_ms")
    return {
        "rounds": args.rounds,
        "servers": {kind: {key: median(kind, key) for key in keys} for kind in samples},
        "round_ratios": ratios("authgate"),
        "authgate/raw": statistics.median(ratios("authgate")),
        "authgate/raw server alone": statistics.median(
            ratios("authgate", "per_server_alone_cpu_second")
        ),
        "round_ratios_without_access_log": ratios(NO_LOG),
        "authgate without access log/raw": statistics.median(ratios(NO_LOG)),
        "round_ratios_to_raw_asyncpg": ratios("authgate", baseline="raw-asyncpg"),
        "authgate/raw-asyncpg": statistics.median(ratios("authgate", baseline="raw-asyncpg")),
        "authgate/raw-asyncpg server alone": statistics.median(
            ratios("authgate", "per_server_alone_cpu_second", "raw-asyncpg")
        ),
        "authgate without access log/raw-asyncpg": statistics.median(
            ratios(NO_LOG, baseline="raw-asyncpg")
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--seconds", type=float, default=8.0, help="measured, per figure")
    parser.add_argument("--rounds", type=int, default=5, help="introspection rounds")
    parser.add_argument("--workers", type=int, default=8, help="concurrent flows/refreshes")
    parser.add_argument("--connections", type=int, default=16, help="introspection")
    parser.add_argument("--quick", action="store_true", help="1 s figures, 2 rounds")
    parser.add_argument("--profile", action="store_true", help="py-spy over flows, refreshes")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 1.0, 2
    if args.profile and not profiling.available():
        print("py-spy is not installed: scripts/bootstrap dev", file=sys.stderr)
        return 2
    started = time.monotonic()
    with pinned_to(1):
        report = asyncio.run(run(args))
    report["wall_seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(report, indent=2))
    print(
        f"code flow {report['code_flow']['per_cpu_second']} per CPU second (target "
        f"{FLOW_TARGET:g}); refresh {report['refresh']['per_cpu_second']} (target "
        f"{REFRESH_TARGET:g}); introspection authgate/raw {report['introspection']['authgate/raw']}"
        f" (target {INTROSPECTION_TARGET:g}; rounds {report['introspection']['round_ratios']}),"
        f" {report['introspection']['authgate without access log/raw']} with authgate's access"
        " log off, as the raw handler's (the raw handler on authgate's pool; on asyncpg's:"
        f" {report['introspection']['authgate/raw-asyncpg']},"
        f" {report['introspection']['authgate without access log/raw-asyncpg']});"
        f" two RS256 signatures alone allow at most "
        f"{report['signature_ceiling']['token_responses_per_cpu_second_at_most']} token "
        "responses per CPU second",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
