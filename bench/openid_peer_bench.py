"""authgate's OpenID Provider against node ``oidc-provider`` 9.13, on the same store.

Four servers, each started for the run and pinned to CPU 0 (this process, the load, on CPU 1):

* ``authgate memory``: ``authgate serve`` on ``memory://``;
* ``authgate PostgreSQL``: ``authgate serve`` on a fresh PostgreSQL database (migrated);
* ``oidc-provider Map``: bench/peers/oidc_provider/server.js on its plain ``Map`` adapter
  (oidc-provider's shipped memory adapter is an LRU of 1,000 entries that evicts live grants
  under load);
* ``oidc-provider PostgreSQL``: the same server on another fresh database through
  bench/peers/oidc_provider/adapters.js's ``pg`` adapter (the interface of oidc-provider's
  documentation, shaped as its contributed PostgreSQL example: a table per model, JSONB payload).

RS256 with a 2048-bit key on all four. One confidential client ``web`` (HTTP Basic, PKCE S256,
no consent page once granted) and one introspecting client ``rs``. Every browser signs in once
(authgate: through the fake identity provider; oidc-provider: its development login and consent
pages), then the measured work reuses that session:

* ``code flow``: authorize (``openid``) with the session cookie -> code -> token: an ID token
  and an access token. authgate's access token is an RFC 9068 JWT (RS256); oidc-provider's is
  opaque and stored by default, so it is measured twice: as configured by default (one
  signature a flow) and with ``resource=`` an API whose tokens are JWTs
  (``features.resourceIndicators``, ``accessTokenFormat: 'jwt'``, RS256: two signatures a
  flow, as authgate's).
* ``refresh``: ``grant_type=refresh_token``; both rotate the refresh token at each use
  (oidc-provider configured ``rotateRefreshToken: true``); both variants for oidc-provider.
* ``userinfo``: ``GET`` with ``Authorization: Bearer``. Not the same work: authgate verifies its
  JWT access token (RS256) and reads the session, token family and account; oidc-provider looks
  its opaque token up (and the session and grant it names). oidc-provider refuses its JWT access
  tokens at userinfo (their audience is the API), and authgate issues no opaque access token, so
  no like-for-like pair exists here.
* ``introspection of the access token`` (the userinfo token): not the same work, as above;
  oidc-provider refuses to introspect its JWT access tokens.
* ``introspection of a refresh token``: the same work on both sides: an opaque token looked up
  in the store (and the session, grant or family, and account it names).
* ``client credentials``: the confidential client ``svc`` (HTTP Basic) asks for ``scope=api``
  with ``resource=`` the API: an RS256 JWT access token for the client itself, signed once and
  stored by neither (the same work); oidc-provider also without ``resource``, its default: an
  opaque token it stores.

The machine's own limit beside them, measured in the same run on the load generator's CPU:
RS256 and ES256 signatures per CPU second (joserfc), and what that alone allows: a code flow
signs two tokens, a client-credentials token one.

Each server's answers are compared first (same status, same claim names). Figures are per CPU
second: the server process's CPU (user + system from /proc, all its threads) plus that of the
PostgreSQL backends on its database; "server alone" beside it. The works are measured in
``--rounds`` rounds, the servers' order reversed every other round; the ratio authgate ÷
oidc-provider is taken per round and the median reported.

    .venv/bin/python bench/openid_peer_bench.py            # ~10 minutes
    .venv/bin/python bench/openid_peer_bench.py --quick    # a smoke run
    .venv/bin/python bench/openid_peer_bench.py --profile  # and py-spy over authgate's flows

Needs Node.js 20+ and bench/peers/oidc_provider/node_modules (``scripts/interop-deps``).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import asyncpg
from yarl import URL

from bench import profiling
from bench.harness import (
    ServiceProcess,
    SignInDriver,
    free_port,
    migrate,
    service_config,
    temp_folder,
    write_config,
)
from bench.httpload import closed_loop, request_bytes
from bench.load import DEFAULT_ADMIN_URL, backend_cpu, backend_cpu_between, cpu_split, pinned_to
from bench.openid_bench import (
    CLIENTS,
    INTROSPECTOR_SECRET,
    ISSUER,
    REDIRECT,
    SECRET,
    basic,
    closed_workers,
    pkce,
    settle,
)
from tests.fakeidp import FakeIdP

PEER_DIR = Path(__file__).resolve().parent / "peers" / "oidc_provider"
RESOURCE = "https://api.example.com/rs"
SERVICE_SECRET = "a-service-secret-of-at-least-thirty-two-characters"
# The client-credentials client, on authgate's side (the peer's is in server.js).
SERVICE_CLIENT: dict[str, Any] = {
    "name": "Service",
    "type": "confidential",
    "secrets": [SERVICE_SECRET],
    "grant_types": ["client_credentials"],
    "allowed_scopes": ["api"],
    "resources": [RESOURCE],
}
USERINFO_SCOPE = "openid email profile"
AUTHGATE_MEMORY = "authgate memory"
AUTHGATE_PG = "authgate PostgreSQL"
OP_MAP = "oidc-provider Map"
OP_PG = "oidc-provider PostgreSQL"
JWT = ", JWT access tokens"  # the oidc-provider variant asked for resource=RESOURCE
# The ratios reported: (work, authgate side, oidc-provider side).
PAIRS = (
    [
        (work, a, o)
        for work in ("code_flow", "refresh")
        for a, o in (
            (AUTHGATE_MEMORY, OP_MAP + JWT),
            (AUTHGATE_MEMORY, OP_MAP),
            (AUTHGATE_PG, OP_PG + JWT),
            (AUTHGATE_PG, OP_PG),
            (AUTHGATE_PG, OP_MAP + JWT),
        )
    ]
    + [
        (work, a, o)
        for work in ("userinfo", "introspection_access_token", "introspection_refresh_token")
        for a, o in ((AUTHGATE_MEMORY, OP_MAP), (AUTHGATE_PG, OP_PG))
    ]
    + [
        ("client_credentials", a, o)
        for a, o in (
            (AUTHGATE_MEMORY, OP_MAP + JWT),
            (AUTHGATE_MEMORY, OP_MAP),
            (AUTHGATE_PG, OP_PG + JWT),
            (AUTHGATE_PG, OP_PG),
        )
    ]
)
WORK_DONE = {
    "code_flow": "authorize with a live session and grant -> code -> token (ID token RS256; "
    "authgate's access token an RS256 JWT; oidc-provider's opaque and stored, or with "
    f"'{JWT.strip(', ')}' an RS256 JWT not stored)",
    "refresh": "refresh-token rotation: the same tokens as the code flow's token response",
    "userinfo": "not the same work: authgate verifies its RS256 JWT access token (and reads its "
    "session, token family and account); oidc-provider looks its opaque access token up (and "
    "its session, grant) -- it refuses its JWT access tokens at userinfo",
    "introspection_access_token": "not the same work, as userinfo's: oidc-provider refuses to "
    "introspect JWT access tokens (rejectStructuredTokens), so its token is the opaque one",
    "introspection_refresh_token": "the same work: an opaque refresh token looked up in the "
    "store, with what it names (authgate: session, family, account; oidc-provider: session, "
    "grant)",
    "client_credentials": "a token for the client svc itself (HTTP Basic, scope api, resource "
    f"the API): an RS256 JWT, stored by neither; oidc-provider without '{JWT.strip(', ')}' "
    "issues its default, an opaque token it stores",
}
# What one unit of each work signs (RS256): the ceiling the signature rate alone allows.
SIGNATURES = {"code_flow": 2, "refresh": 2, "client_credentials": 1}


def missing_node() -> str | None:
    """Why the oidc-provider peer cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (PEER_DIR / "node_modules" / "oidc-provider").is_dir():
        return f"{PEER_DIR}/node_modules is missing (scripts/interop-deps installs it)"
    return None


class NodePeer:
    """``node server.js`` (bench/peers/oidc_provider) on a loopback port, pinned like authgate;
    ``async with`` starts it and waits for its ready line."""

    def __init__(self, folder: Path, store: str, database_url: str | None, cpu: int) -> None:
        self.port = free_port()
        self.store = store
        self.log_path = folder / f"oidc-provider-{store}.log"
        self.env = {
            **os.environ,
            "OP_PORT": str(self.port),
            "OP_STORE": store,
            "WEB_SECRET": SECRET,
            "INTROSPECTOR_SECRET": INTROSPECTOR_SECRET,
            "SERVICE_SECRET": SERVICE_SECRET,
            "REDIRECT_URI": REDIRECT,
            "RESOURCE": RESOURCE,
            **({"DATABASE_URL": database_url} if database_url else {}),
        }
        self.cpu = cpu
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    async def __aenter__(self) -> NodePeer:
        command = ["taskset", "-c", str(self.cpu), "node", "server.js"]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(  # noqa: ASYNC220 - a child we wait on by polling
                command,
                cwd=PEER_DIR,
                env=self.env,
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 30
        while '"event":"ready"' not in self.log():
            if self.process.poll() is not None or time.monotonic() > deadline:
                await self.__aexit__()
                raise RuntimeError(f"oidc-provider ({self.store}) did not start:\n{self.log()}")
            await asyncio.sleep(0.05)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        for _ in range(200):
            if self.process.poll() is not None:
                return
            await asyncio.sleep(0.05)
        self.process.kill()
        self.process.wait(timeout=10)


class Side:
    """One server as the load sees it: its endpoints (from discovery), its browser's session
    cookie, and whether its requests name the JWT resource."""

    def __init__(
        self,
        name: str,
        pid: int,
        base: str,
        database_url: str | None,
        http: aiohttp.ClientSession,
        *,
        resource: str | None = None,
    ) -> None:
        self.name, self.pid, self.base, self.database_url = name, pid, base, database_url
        self.port = int(urlsplit(base).port or 80)
        self.http = http
        self.resource = resource
        self.cookie = ""
        self.endpoints: dict[str, str] = {}
        self.token_auth = basic("web", SECRET)
        self.chains: list[str] = []
        # oidc-provider's: its development pages' browser (a cookie jar), for consents
        self.pages: Any = None

    def renew_cookie(self) -> None:
        """oidc-provider's session cookie as its pages' browser holds it now: every
        interaction (a consent too) gives the session a new id."""
        if self.pages is not None:
            jar = self.pages.http.cookie_jar.filter_cookies(
                URL(self.endpoints["authorization_endpoint"])
            )
            self.cookie = "; ".join(f"{k}={m.value}" for k, m in jar.items())

    def variant(self, name: str, resource: str) -> Side:
        other = Side(name, self.pid, self.base, self.database_url, self.http, resource=resource)
        other.cookie, other.endpoints, other.pages = self.cookie, self.endpoints, self.pages
        return other

    async def discover(self) -> None:
        async with self.http.get(f"{self.base}/.well-known/openid-configuration") as response:
            found = await response.json(content_type=None)
        # authgate names its public address (rest.public_url); the load goes to loopback
        self.endpoints = {
            key: self.base + urlsplit(value).path
            for key, value in found.items()
            if key.endswith("_endpoint") and isinstance(value, str)
        }

    def authorize_url(self, scope: str, challenge: str, **extra: str) -> str:
        query = {
            "response_type": "code",
            "client_id": "web",
            "redirect_uri": REDIRECT,
            "scope": scope,
            "state": "bench-state",
            "nonce": "bench-nonce",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            **({"resource": self.resource} if self.resource else {}),
            **extra,
        }
        return f"{self.endpoints['authorization_endpoint']}?{urlencode(query)}"

    async def code(self, scope: str) -> tuple[str, str]:
        verifier, challenge = pkce()
        async with self.http.get(
            self.authorize_url(scope, challenge),
            headers={"Cookie": self.cookie, "Accept": "text/html"},
            allow_redirects=False,
        ) as response:
            await response.read()
            location = response.headers.get("Location", "")
            if response.status not in (302, 303) or not location.startswith(REDIRECT):
                raise RuntimeError(f"{self.name}: authorize answered {response.status} {location}")
        params = parse_qs(urlsplit(location).query)
        if "code" not in params:
            raise RuntimeError(f"{self.name}: no code: {location[:300]}")
        return params["code"][0], verifier

    async def token(self, form: dict[str, str]) -> dict[str, Any]:
        if self.resource:
            form = {**form, "resource": self.resource}
        async with self.http.post(
            self.endpoints["token_endpoint"], data=form, headers={"Authorization": self.token_auth}
        ) as response:
            body = await response.json(content_type=None)
            if response.status != 200:
                raise RuntimeError(f"{self.name}: token answered {response.status}: {body}")
            assert isinstance(body, dict)
            return body

    async def redeem(self, code: str, verifier: str) -> dict[str, Any]:
        return await self.token(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "code_verifier": verifier,
            }
        )

    async def flow(self, scope: str = "openid") -> dict[str, Any]:
        return await self.redeem(*await self.code(scope))

    async def refresh(self, token: str) -> str:
        body = await self.token({"grant_type": "refresh_token", "refresh_token": token})
        return str(body["refresh_token"])

    def userinfo_request(self, access_token: str) -> bytes:
        path = urlsplit(self.endpoints["userinfo_endpoint"]).path
        return request_bytes(path, self.port, {"Authorization": f"Bearer {access_token}"})

    def client_credentials_request(self) -> bytes:
        """The token request of ``svc`` for itself (``resource`` when the side names one:
        authgate's always does, its client may have tokens only for the API)."""
        path = urlsplit(self.endpoints["token_endpoint"]).path
        form = {"grant_type": "client_credentials", "scope": "api"}
        if self.resource or self.name.startswith("authgate"):
            form["resource"] = RESOURCE
        body = urlencode(form).encode()
        head = [
            f"POST {path} HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            "Accept: application/json",
            "Content-Type: application/x-www-form-urlencoded",
            f"Authorization: {basic('svc', SERVICE_SECRET)}",
            f"Content-Length: {len(body)}",
        ]
        return ("\r\n".join(head) + "\r\n\r\n").encode() + body

    def introspection_request(self, token: str) -> bytes:
        path = urlsplit(self.endpoints["introspection_endpoint"]).path
        body = urlencode({"token": token}).encode()
        head = [
            f"POST {path} HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            "Accept: application/json",
            "Content-Type: application/x-www-form-urlencoded",
            f"Authorization: {basic('rs', INTROSPECTOR_SECRET)}",
            f"Content-Length: {len(body)}",
        ]
        return ("\r\n".join(head) + "\r\n\r\n").encode() + body

    async def send(self, request: bytes) -> tuple[int, dict[str, Any]]:
        """One raw request over its own connection: the status and the JSON answer."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            writer.write(request.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1))
            raw = await reader.read()
        finally:
            writer.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        answer = json.loads(body) if body else {}
        assert isinstance(answer, dict)
        return int(head.split()[1]), answer


async def authgate_side(
    name: str, service: ServiceProcess, database_url: str | None, fake: FakeIdP, http: Any
) -> Side:
    side = Side(name, service.pid, service.url, database_url, http)
    await side.discover()
    async with SignInDriver(fake) as driver:
        signed_in = await driver.complete(service.url, intent="register")
    if not signed_in.signed_in:
        raise RuntimeError(f"{name}: the sign-in failed: {signed_in}")
    side.cookie = f"session={signed_in.session}"
    return side


async def peer_side(name: str, peer: NodePeer, database_url: str | None, http: Any) -> Side:
    """oidc-provider's side, signed in and granted once through its development pages (login,
    then consent to ``openid offline_access email profile`` and the JWT resource's ``api``)."""
    from tests.interop.support import Browser as PageBrowser

    side = Side(name, peer.pid, peer.url, database_url, http)
    await side.discover()
    pages = PageBrowser(peer.url)
    try:
        _, challenge = pkce()
        url = side.variant("grant", RESOURCE).authorize_url(
            "openid offline_access email profile api", challenge, prompt="consent"
        )
        answer = await pages.through_provider(url, stop_at=REDIRECT, login="bench")
        if "code=" not in (answer.location or ""):
            raise RuntimeError(f"{name}: no code after sign-in: {answer.location}")
        side.pages = pages  # for the refresh chains' consents
        side.renew_cookie()
    except BaseException:
        await pages.close()
        raise
    return side


async def refresh_chains(side: Side, count: int) -> list[str]:
    """``count`` refresh tokens, each its own chain (``offline_access``)."""
    pages = side.pages
    chains = []
    for _ in range(count):
        if pages is None:  # authgate: a first-party client is granted offline_access at once
            chains.append(str((await side.flow("openid offline_access"))["refresh_token"]))
            continue
        # oidc-provider grants offline_access only with prompt=consent (OpenID Connect Core
        # 11), which shows the consent page every time.
        verifier, challenge = pkce()
        url = side.authorize_url("openid offline_access", challenge, prompt="consent")
        answer = await pages.through_provider(url, stop_at=REDIRECT, login="bench")
        code = parse_qs(urlsplit(answer.location or "").query)["code"][0]
        chains.append(str((await side.redeem(code, verifier))["refresh_token"]))
    return chains


class Meter:
    """The CPU seconds of a server process and of the PostgreSQL backends on its database."""

    def __init__(self, side: Side) -> None:
        self.side = side
        self.server = self.database = 0.0

    async def __aenter__(self) -> Meter:
        self._server = sum(cpu_split(self.side.pid))
        url = self.side.database_url
        self._backends = await backend_cpu(url) if url else {}
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server = sum(cpu_split(self.side.pid)) - self._server
        url = self.side.database_url
        if url:
            self.database = backend_cpu_between(self._backends, await backend_cpu(url))


def figures(count: int, seconds: float, latencies: list[float], meter: Meter) -> dict[str, Any]:
    ordered = sorted(latencies)
    total = meter.server + meter.database
    return {
        "count": count,
        "per_second": round(count / seconds, 1),
        "server_cpu_seconds": round(meter.server, 3),
        "database_cpu_seconds": round(meter.database, 3),
        # below 1: the load generator, not the server, set the pace
        "server_cpu_share": round(meter.server / seconds, 2),
        "per_cpu_second": round(count / total, 1) if total else None,
        "per_server_alone_cpu_second": round(count / meter.server, 1) if meter.server else None,
        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 2) if ordered else None,
    }


Measure = Callable[[float], Awaitable[dict[str, Any]]]


def stateful(side: Side, kind: str, workers: int) -> Measure:
    """A measure of flows or refreshes through the aiohttp client (every code and refresh
    token is used once)."""

    async def flow(_: int) -> None:
        await side.flow()

    async def refresh(worker: int) -> None:
        side.chains[worker] = await side.refresh(side.chains[worker])

    step = flow if kind == "code_flow" else refresh

    async def measure(seconds: float) -> dict[str, Any]:
        async with Meter(side) as meter:
            count, taken, latencies = await closed_workers(seconds, workers, step)
        return figures(count, taken, latencies, meter)

    return measure


# authgate's access tokens live 5 minutes, and a run lasts longer: the token a userinfo or
# introspection figure replays is made again (by a code flow, outside the measured period)
# once it is this old.
TOKEN_AGE_SECONDS = 120.0


def replayed(
    side: Side, request: bytes, connections: int, remake: Callable[[], Awaitable[bytes]] | None
) -> Measure:
    """A measure of one request sent again and again (bench/httpload.py); ``remake`` makes it
    again with a fresh token."""
    made = time.monotonic()

    async def measure(seconds: float) -> dict[str, Any]:
        nonlocal request, made
        if remake is not None and time.monotonic() - made > TOKEN_AGE_SECONDS:
            request, made = await remake(), time.monotonic()
        async with Meter(side) as meter:
            result = await closed_loop(side.port, request, connections=connections, seconds=seconds)
        if result.errors:
            raise RuntimeError(f"{side.name}: {result.errors} errors, first: {result.first_error}")
        return figures(result.count, result.seconds, result.latencies, meter)

    return measure


def fresh_access(side: Side, request: Callable[[str], bytes]) -> Callable[[], Awaitable[bytes]]:
    async def remake() -> bytes:
        return request(str((await side.flow(USERINFO_SCOPE))["access_token"]))

    return remake


async def read_cases(
    sides: dict[str, Side], connections: int, shown: dict[str, list[str]]
) -> dict[str, dict[str, Measure]]:
    """Userinfo and both introspections for each base side, their answers compared first
    (every answer 200, every token active, the userinfo claims the same on every side); the
    claim names of each answer go into ``shown``."""
    cases: dict[str, dict[str, Measure]] = {
        "userinfo": {},
        "introspection_access_token": {},
        "introspection_refresh_token": {},
    }
    answers: dict[str, dict[str, Any]] = {}
    for name in (AUTHGATE_MEMORY, AUTHGATE_PG, OP_MAP, OP_PG):
        side = sides[name]
        access = str((await side.flow(USERINFO_SCOPE))["access_token"])
        [refresh] = await refresh_chains(side, 1)
        requests = {
            "userinfo": side.userinfo_request(access),
            "introspection_access_token": side.introspection_request(access),
            "introspection_refresh_token": side.introspection_request(refresh),
        }
        remakes = {
            "userinfo": fresh_access(side, side.userinfo_request),
            "introspection_access_token": fresh_access(side, side.introspection_request),
            "introspection_refresh_token": None,  # refresh tokens live for days
        }
        for work, request in requests.items():
            status, answer = await side.send(request)
            if status != 200 or (work != "userinfo" and answer.get("active") is not True):
                raise RuntimeError(f"{name} {work}: {status} {answer}")
            answers[f"{work} {name}"] = answer
            cases[work][name] = replayed(side, request, connections, remakes[work])
    for work in cases:
        names = {side: sorted(answers[f"{work} {side}"]) for side in cases[work]}
        claims = {tuple(n) for n in names.values()}
        if work == "userinfo" and len(claims) != 1:
            raise RuntimeError(f"userinfo answers differ: {names}")
        for side in cases[work]:
            kind = answers[f"{work} {side}"].get("token_type")
            if work == "introspection_refresh_token" and kind not in ("refresh_token", None):
                raise RuntimeError(f"{side} introspected a refresh token as {kind}")
    # what each answered, by claim name (the values differ: subjects, issuers, times)
    shown.update({key: sorted(answer) for key, answer in answers.items()})
    return cases


async def client_credentials_cases(
    sides: dict[str, Side], connections: int, shown: dict[str, list[str]]
) -> dict[str, Measure]:
    """The client-credentials token request of every side, its answer checked first: 200, a
    Bearer token; where a JWT, an RFC 9068 one for ``svc`` itself, audience the API."""
    cases: dict[str, Measure] = {}
    for name, side in sides.items():
        request = side.client_credentials_request()
        status, answer = await side.send(request)
        if status != 200 or answer.get("token_type", "").lower() != "bearer":
            raise RuntimeError(f"{name} client credentials: {status} {answer}")
        token = str(answer["access_token"])
        if name.startswith("authgate") or side.resource:
            header, claims = (jwt_part(token, i) for i in (0, 1))
            if (header.get("typ"), header.get("alg")) != ("at+jwt", "RS256"):
                raise RuntimeError(f"{name} client credentials: header {header}")
            if claims.get("aud") not in (RESOURCE, [RESOURCE]) or claims.get("client_id") != "svc":
                raise RuntimeError(f"{name} client credentials: claims {claims}")
            shown[f"client_credentials {name}"] = sorted(claims)
        else:
            shown[f"client_credentials {name}"] = ["(opaque)"]
        cases[name] = replayed(side, request, connections, None)
    return cases


def jwt_part(token: str, index: int) -> dict[str, Any]:
    part = token.split(".")[index]
    decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    assert isinstance(decoded, dict)
    return decoded


def signature_rates(signatures: int = 300) -> dict[str, float]:
    """RS256 (2048-bit) and ES256 signatures per CPU second on this machine (joserfc, an access
    token's claims), on the load generator's CPU (time.process_time)."""
    from joserfc import jwt
    from joserfc.jwk import ECKey, RSAKey

    claims = {
        "iss": ISSUER,
        "sub": "svc",
        "aud": RESOURCE,
        "client_id": "svc",
        "scope": "api",
        "iat": 1_800_000_000,
        "exp": 1_800_000_300,
        "jti": "0" * 32,
    }
    rates = {}
    for alg, key in (
        ("RS256", RSAKey.generate_key(2048, parameters={"kid": "bench"})),
        ("ES256", ECKey.generate_key("P-256", parameters={"kid": "bench"})),
    ):
        header = {"alg": alg, "kid": "bench", "typ": "at+jwt"}
        jwt.encode(header, claims, key)  # warm
        began = time.process_time()
        for _ in range(signatures):
            jwt.encode(header, claims, key)
        rates[alg] = round(signatures / (time.process_time() - began), 1)
    return rates


def against_signatures(report: dict[str, Any]) -> dict[str, Any]:
    """Each authgate side's figure as a fraction of what the RS256 signature rate alone allows
    (rate ÷ signatures a unit), and what one unit would cost with ES256 access tokens instead:
    the same figure's CPU per unit, less one RS256 signature, plus one ES256 signature."""
    rates = report["signature_rates"]
    rs, es = 1 / rates["RS256"], 1 / rates["ES256"]
    out: dict[str, Any] = {}
    for work, signed in SIGNATURES.items():
        for name in (AUTHGATE_MEMORY, AUTHGATE_PG):
            figure = report["figures"].get(work, {}).get(name, {}).get("per_cpu_second")
            if not figure:
                continue
            per_unit = 1 / figure
            out[f"{work}: {name}"] = {
                "of_the_signature_ceiling": round(figure / (rates["RS256"] / signed), 3),
                "signatures_share_of_cpu": round(signed * rs / per_unit, 3),
                "per_cpu_second_with_es256_access_tokens": round(1 / (per_unit - rs + es), 1),
            }
    return out


async def run_peers(args: argparse.Namespace) -> dict[str, Any]:
    folder = temp_folder("authgate-bench-openid-peer-")
    admin_url = args.admin_url
    names = {
        "authgate": f"authgate_bench_peer_{os.getpid()}",
        "oidc": f"oidc_provider_bench_{os.getpid()}",
    }
    admin = await asyncpg.connect(admin_url)
    for name in names.values():
        await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    urls = {k: admin_url.rsplit("/", 1)[0] + f"/{v}" for k, v in names.items()}
    try:
        return await measured(args, folder, urls)
    finally:
        admin = await asyncpg.connect(admin_url)
        for name in names.values():
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@contextlib.asynccontextmanager
async def servers(
    folder: Path, urls: dict[str, str], fake: FakeIdP
) -> AsyncIterator[tuple[ServiceProcess, ServiceProcess, NodePeer, NodePeer]]:
    overrides = {
        "rest": {"public_url": ISSUER},
        "clients": {**CLIENTS, "svc": SERVICE_CLIENT},
        # One address sends everything: limits out of reach (the limiters still run).
        "ratelimit": {
            key: "1000000000/minute"
            for key in ("token", "token_address", "authorize", "userinfo", "introspection")
        },
    }
    memory_file = write_config(
        folder, service_config(folder, fake, overrides=overrides), "config-memory.yaml"
    )
    pg_file = write_config(
        folder,
        service_config(folder, fake, database_url=urls["authgate"], overrides=overrides),
        "config-postgres.yaml",
    )
    await asyncio.to_thread(migrate, pg_file)
    async with (
        ServiceProcess(memory_file, taskset_cpu=0) as memory,
        ServiceProcess(pg_file, taskset_cpu=0) as on_pg,
        NodePeer(folder, "map", None, 0) as op_map,
        NodePeer(folder, "postgres", urls["oidc"], 0) as op_pg,
    ):
        yield memory, on_pg, op_map, op_pg


async def measured(args: argparse.Namespace, folder: Path, urls: dict[str, str]) -> dict[str, Any]:
    report: dict[str, Any] = {"work": WORK_DONE, "workers": args.workers}
    async with (
        FakeIdP() as fake,
        servers(folder, urls, fake) as (memory, on_pg, op_map, op_pg),
        aiohttp.ClientSession(
            cookie_jar=aiohttp.DummyCookieJar(),
            connector=aiohttp.TCPConnector(limit=args.workers * 8),
        ) as http,
    ):
        sides = {
            AUTHGATE_MEMORY: await authgate_side(AUTHGATE_MEMORY, memory, None, fake, http),
            AUTHGATE_PG: await authgate_side(AUTHGATE_PG, on_pg, urls["authgate"], fake, http),
            OP_MAP: await peer_side(OP_MAP, op_map, None, http),
            OP_PG: await peer_side(OP_PG, op_pg, urls["oidc"], http),
        }
        try:
            for base in (OP_MAP, OP_PG):
                sides[base + JWT] = sides[base].variant(base + JWT, RESOURCE)
            for side in sides.values():
                side.chains = await refresh_chains(side, args.workers)
            for side in sides.values():
                side.renew_cookie()
            jwt = await sides[OP_MAP + JWT].flow("openid api")
            report["oidc_provider_jwt_access_token_header"] = jwt["access_token"].split(".")[0]
            cases: dict[str, dict[str, Measure]] = {
                kind: {name: stateful(side, kind, args.workers) for name, side in sides.items()}
                for kind in ("code_flow", "refresh")
            }
            report["answers"] = {}
            cases.update(await read_cases(sides, args.connections, report["answers"]))
            cases["client_credentials"] = await client_credentials_cases(
                sides, args.connections, report["answers"]
            )
            for side in sides.values():
                side.renew_cookie()
            report["servers"] = {
                name: {"pid": side.pid, "database": bool(side.database_url)}
                for name, side in sides.items()
            }
            report["signature_rates"] = signature_rates()
            report.update(await rounds(cases, urls, args))
            report["against_signatures"] = against_signatures(report)
            if args.profile:
                report["profile"] = {
                    f"{kind} {name}": await profile(sides[name], kind, folder, args.workers)
                    for name in (AUTHGATE_MEMORY, AUTHGATE_PG)
                    for kind in ("code_flow", "refresh")
                }
        finally:
            for side in sides.values():
                if side.pages is not None and side.resource is None:
                    await side.pages.close()
    return report


async def rounds(
    cases: dict[str, dict[str, Measure]], urls: dict[str, str], args: argparse.Namespace
) -> dict[str, Any]:
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {
        work: {name: [] for name in by_side} for work, by_side in cases.items()
    }
    for by_side in cases.values():  # warm-up: pools, caches, the JIT
        for measure in by_side.values():
            await measure(min(args.seconds, 1.0))
    for r in range(args.rounds):
        for work, by_side in cases.items():
            order = list(by_side) if r % 2 == 0 else list(reversed(by_side))
            for name in order:
                samples[work][name].append(await by_side[name](args.seconds))
            for url in urls.values():
                await settle(url)

    def median(work: str, name: str, key: str) -> float | None:
        values = [s[key] for s in samples[work][name] if s[key] is not None]
        return round(statistics.median(values), 2) if values else None

    keys = (
        "per_second",
        "per_cpu_second",
        "per_server_alone_cpu_second",
        "server_cpu_seconds",
        "database_cpu_seconds",
        "server_cpu_share",
        "p50_ms",
    )
    out: dict[str, Any] = {
        "rounds": args.rounds,
        "seconds": args.seconds,
        "figures": {
            work: {name: {k: median(work, name, k) for k in keys} for name in by_side}
            for work, by_side in samples.items()
        },
        "ratios": {},
    }
    for work, a, o in PAIRS:
        per_round = [
            round(x["per_cpu_second"] / y["per_cpu_second"], 3)
            for x, y in zip(samples[work][a], samples[work][o], strict=True)
            if x["per_cpu_second"] and y["per_cpu_second"]
        ]
        alone = [
            round(x["per_server_alone_cpu_second"] / y["per_server_alone_cpu_second"], 3)
            for x, y in zip(samples[work][a], samples[work][o], strict=True)
            if x["per_server_alone_cpu_second"] and y["per_server_alone_cpu_second"]
        ]
        out["ratios"][f"{work}: {a} / {o}"] = {
            "median": statistics.median(per_round) if per_round else None,
            "rounds": per_round,
            "servers_alone_median": statistics.median(alone) if alone else None,
        }
    return out


# Where authgate's CPU goes, inclusive: a sample counts for every needle on its stack.
PROFILE_NEEDLES = {
    "RS256 signing (joserfc _RSAAlgModel.sign)": "_RSAAlgModel.sign",
    "joserfc + cryptography": ("joserfc/", "cryptography/"),
    "memory store (adapters/memory)": "adapters/memory/",
    "PostgreSQL adapters + asyncpg": ("adapters/postgres/", "adapters/sql/", "asyncpg/"),
    "asyncpg": "asyncpg/",
    "the provider's services (services/openid)": "services/openid/",
    "sessions (services/sessions)": "services/sessions",
    "logging": "logging/",
    "HTTP entrypoints (entrypoints/http)": "entrypoints/http/",
    "REST layer (entrypoints/rest)": "entrypoints/rest/",
    "copy / deepcopy": "copy.py",
}


async def profile(side: Side, kind: str, folder: Path, workers: int) -> dict[str, Any]:
    """py-spy over 8 s of ``kind`` on one of authgate's sides (it slows the server). The access
    log's writer thread waiting for records (py-spy samples it as on-CPU) is left out, as
    bench/profiling.py leaves out idle pool threads; its share of the raw samples is reported."""
    folded = folder / f"{kind}-{side.name.replace(' ', '-')}.folded"
    spy = profiling.record(side.pid, 8, folded)
    await stateful(side, kind, workers)(9.0)
    await asyncio.to_thread(spy.wait)
    raw = [
        (stack, int(count))
        for stack, _, count in (line.rpartition(" ") for line in folded.read_text().splitlines())
        if count.isdigit()
    ]
    waiting = ("LingeringListener.dequeue", *profiling.IDLE)
    samples = [(st, c) for st, c in raw if not st.rsplit(";", 1)[-1].startswith(waiting)]
    total = sum(count for _, count in samples) or 1
    inclusive = {}
    for label, needles in PROFILE_NEEDLES.items():
        wanted = (needles,) if isinstance(needles, str) else needles
        hit = sum(c for stack, c in samples if any(n in stack for n in wanted))
        inclusive[label] = round(hit / total, 3)
    categories: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    for stack, count in samples:
        categories[profiling.category(stack)] += count
        leaves[stack.rsplit(";", 1)[-1]] += count
    return {
        "samples": total,
        "log_writer_waiting_share_of_raw": round(1 - total / (sum(c for _, c in raw) or 1), 3),
        "inclusive": inclusive,
        "shares": {name: round(n / total, 3) for name, n in categories.most_common()},
        "top_self": [(frame, round(n / total, 3)) for frame, n in leaves.most_common(12)],
    }


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--seconds", type=float, default=4.0, help="measured, per figure")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=8, help="concurrent flows/refreshes")
    parser.add_argument("--connections", type=int, default=16, help="userinfo, introspection")
    parser.add_argument("--quick", action="store_true", help="0.5 s figures, 1 round")
    parser.add_argument("--profile", action="store_true", help="py-spy over authgate's flows")
    args = parser.parse_args()
    if args.profile and not profiling.available():
        print("py-spy is not installed: scripts/bootstrap dev", file=sys.stderr)
        return 2
    if args.quick:
        args.seconds, args.rounds, args.workers = 0.5, 1, 2
    why_not = missing_node()
    if why_not is not None:
        print(f"openid_peer_bench: {why_not}", file=sys.stderr)
        return 2
    started = time.monotonic()
    load_before = load_average()
    with pinned_to(1):
        report = asyncio.run(run_peers(args))
    report["wall_seconds"] = round(time.monotonic() - started, 1)
    report["load_average_before_after"] = [load_before, load_average()]
    print(json.dumps(report, indent=2))
    for pair, ratio in report["ratios"].items():
        print(f"{pair}: {ratio['median']} (rounds {ratio['rounds']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
