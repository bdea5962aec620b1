"""Real ``authgate serve`` processes on loopback, and a driver of complete sign-ins through them.

Shared by the fuzz, fault, scale-out and load suites (tests/fuzz, tests/faults, tests/scaleout,
tests/load) and the benchmarks in bench/. Everything here talks to 127.0.0.1 only.

* :func:`service_config` — the YAML of one instance: the fake identity provider's providers,
  a database URL, a rate-limit store, a session key file;
* :class:`ServiceProcess` — ``authgate serve`` as a child process (``async with``): waits until
  it answers, exposes its address, pid, resident memory and log, and never outlives its block;
* :func:`mint_session` — a session token from the service's own key file (bearer tests);
* :class:`SignInDriver` — initiation, the provider's page (the fake plays it), callback, as a
  browser would, on any instance (a sign-in may start on one and complete on another).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import asyncpg
import attrs
import yaml

from authgate.adapters.jose import JwtSessionTokens, load_or_create_keys
from tests.fakeidp import FakeIdP, FakeUser
from tests.support.ports import free_port, free_ports

ROOT = Path(__file__).resolve().parent.parent
APP_URL = "https://app.example.com"
CALLBACK_URL = "https://api.example.com/v1/auth/{name}/callback"
PROVIDERS = ("google", "facebook", "apple")
SESSION_ISSUER = "authgate-proof"
SESSION_AUDIENCE = "authgate-proof"


def free_port_run(count: int) -> int:
    """The first of ``count`` consecutive loopback ports free at the time of the call (the
    metrics ports of workers: ``metrics.port + i``)."""
    for _ in range(100):
        first = free_port()
        if first + count > 65536:
            continue
        with contextlib.ExitStack() as held:
            try:
                for port in range(first + 1, first + count):
                    s = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                    s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return first
    raise RuntimeError(f"no {count} consecutive free loopback ports")


def deep_merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged into it, mappings key by key (providers too)."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def service_config(
    folder: Path,
    fake: FakeIdP | None,
    *,
    port: int | None = None,
    database_url: str = "memory://",
    ratelimit_storage: str = "memory://",
    keys_file: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The configuration of one instance (a dict; :func:`write_config` writes it).

    Instances that must accept each other's sessions share ``keys_file``."""
    providers = {p: fake.config(p) for p in PROVIDERS} if fake is not None else {}
    # The scrape port differs from the API's (the configuration refuses the same port twice).
    if port:
        [metrics_port] = free_ports(1, besides=(port,))
    else:
        port, metrics_port = free_ports(2)
    config: dict[str, Any] = {
        "environment": "test",
        "rest": {"port": port, "host": "127.0.0.1", "shutdown_timeout_seconds": 30},
        "otel": {"service": {"name": "authgate-proof"}, "sdk": {"disabled": True}},
        # Instances side by side would collide on the default scrape port (9464).
        "metrics": {"port": metrics_port},
        "app": {
            "url": APP_URL,
            "callback_urls": [CALLBACK_URL.format(name=p) for p in providers],
        },
        "database": {"url": database_url},
        "session": {
            "keys_file": str(keys_file or folder / "session-keys.json"),
            "generate_keys": True,
            "issuer": SESSION_ISSUER,
            "audience": SESSION_AUDIENCE,
        },
        "ratelimit": {"storage": ratelimit_storage},
        "providers": providers,
    }
    return deep_merge(config, overrides or {})


def write_config(folder: Path, config: Mapping[str, Any], name: str = "config.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    # sort_keys=False: the providers' order is the order of the error messages
    path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    return path


def authgate_command(*args: str) -> list[str]:
    """``authgate ARGS`` run by this interpreter (the project's venv)."""
    return [sys.executable, "-m", "authgate.entrypoints.cli", *args]


def migrate(config_file: Path) -> None:
    """``authgate migrate --config FILE`` (PostgreSQL); raises with its output on failure."""
    done = subprocess.run(
        authgate_command("migrate", "--config", str(config_file)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"authgate migrate failed: {done.stdout}{done.stderr}")


def rss_kib(pid: int) -> int:
    """Resident memory of a process (VmRSS in /proc/PID/status), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


class ServiceFailed(Exception):
    """The service did not start or died; the text carries the end of its log."""


class ServiceProcess:
    """``authgate serve --config FILE`` as a child process on loopback.

    ``async with ServiceProcess(config_file) as service:`` starts it and waits until
    ``/health/liveness`` answers; on leaving the block it is sent SIGTERM, and killed if it has
    not exited within ``stop_timeout``. Its stderr (the log) goes to ``log_path``.
    """

    def __init__(
        self,
        config_file: Path,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 15.0,
        taskset_cpu: int | None = None,
        port: int | None = None,
        command: list[str] | None = None,
    ) -> None:
        self.config_file = config_file
        self.command = command  # another server to run instead (benchmark baselines)
        # ``port`` when the file takes it from the environment (``${PORT}``)
        self.port = port or int(yaml.safe_load(config_file.read_text())["rest"]["port"])
        self.cwd = cwd or config_file.parent
        self.env = dict(env) if env is not None else None
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.taskset_cpu = taskset_cpu
        self.log_path = config_file.parent / f"{config_file.stem}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def rss_kib(self) -> int:
        return rss_kib(self.pid)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def children(self) -> list[int]:
        """The pids of its child processes (the workers of ``authgate serve --workers``)."""
        path = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        return [int(pid) for pid in path.read_text().split()]

    def tree_cpu_seconds(self) -> float:
        """CPU time of the process and its living children (a parent and its workers)."""
        total = self.cpu_seconds()
        for child in self.children():
            with contextlib.suppress(OSError):
                total += cpu_seconds(child)
        return total

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    async def start(self) -> ServiceProcess:
        command = self.command or authgate_command("serve", "--config", str(self.config_file))
        if self.taskset_cpu is not None:
            command = ["taskset", "-c", str(self.taskset_cpu), *command]
        env = {**os.environ, **(self.env or {})}
        env.setdefault("PYTHONUNBUFFERED", "1")
        began = time.perf_counter()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(  # noqa: ASYNC220 - a child we wait on by polling
                command, cwd=self.cwd, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL
            )
        try:
            await self._wait_until_live(began)
        except BaseException:
            await self.stop()
            raise
        return self

    async def _wait_until_live(self, began: float) -> None:
        deadline = began + self.start_timeout
        async with aiohttp.ClientSession() as http:
            while True:
                if not self.running():
                    raise ServiceFailed(f"authgate serve exited at start:\n{self.log()[-3000:]}")
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    async with http.get(
                        f"{self.url}/health/liveness", timeout=aiohttp.ClientTimeout(total=1)
                    ) as response:
                        if response.status == 200:
                            self.startup_seconds = time.perf_counter() - began
                            return
                if time.perf_counter() > deadline:
                    raise ServiceFailed(f"authgate serve did not answer:\n{self.log()[-3000:]}")
                await asyncio.sleep(0.01)

    def signal(self, signum: int = signal.SIGTERM) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    async def wait(self, timeout: float) -> int:  # noqa: ASYNC109 - polls a child process
        """The exit status, waiting at most ``timeout`` seconds (TimeoutError otherwise)."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"authgate serve (pid {self.pid}) still running")
            await asyncio.sleep(0.02)
        return self.process.returncode

    async def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after ``stop_timeout``; the exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await self.wait(self.stop_timeout)
            except TimeoutError:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode

    async def __aenter__(self) -> ServiceProcess:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


async def mint_session(
    keys_file: Path | str,
    account_id: str,
    *,
    database_url: str,
    provider: str = "google",
    issuer: str = SESSION_ISSUER,
    audience: str = SESSION_AUDIENCE,
    ttl_seconds: int = 3600,
) -> str:
    """A session token signed with the service's own key, and its server-side record in the
    service's database, as the callback makes them (a token of an unrecorded session is
    refused like a forged one)."""
    keys = load_or_create_keys(keys_file, create=False)
    tokens = JwtSessionTokens(
        keys, issuer=issuer, audience=audience, ttl=dt.timedelta(seconds=ttl_seconds)
    )
    now = dt.datetime.now(dt.UTC)
    issued = tokens.issue(account_id, provider, now)
    values = (
        issued.session_id,
        account_id,
        provider,
        now,
        issued.expires_at,
        now + dt.timedelta(days=30),
        now,
    )
    insert = (
        "INSERT INTO sessions (id, account_id, provider, created_at, expires_at, "
        "absolute_expires_at, auth_time) VALUES "
    )
    if database_url.startswith("sqlite:///"):
        with sqlite3.connect(database_url.removeprefix("sqlite:///")) as db:
            db.execute(
                insert + "(?, ?, ?, ?, ?, ?, ?)",
                tuple(
                    v.isoformat(timespec="microseconds") if isinstance(v, dt.datetime) else v
                    for v in values
                ),
            )
    else:
        conn = await asyncpg.connect(database_url)
        try:
            await conn.execute(insert + "($1, $2, $3, $4, $5, $6, $7)", *values)
        finally:
            await conn.close()
    return issued.token


@attrs.frozen
class CallbackResult:
    """The callback's answer, read whole."""

    status: int
    location: str | None
    session: str | None  # the session cookie's value when one was set
    body: str

    @property
    def redirect_query(self) -> dict[str, str]:
        if self.location is None:
            return {}
        return {k: v[0] for k, v in parse_qs(urlsplit(self.location).query).items()}

    @property
    def signed_in(self) -> bool:
        return self.status == 302 and self.session is not None


class SignInError(Exception):
    """An initiation answered something other than 200."""


class SignInDriver:
    """Plays the browser through complete sign-ins against one or more instances.

    Uses its own client session with no cookie jar: cookies travel by hand, so one driver can
    run many sign-ins at once, each with its own binding cookie, on any instance.
    """

    def __init__(self, fake: FakeIdP, *, connections: int = 100) -> None:
        self.fake = fake
        self._connections = connections
        self.http: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> SignInDriver:
        self.http = aiohttp.ClientSession(
            cookie_jar=aiohttp.DummyCookieJar(),
            connector=aiohttp.TCPConnector(limit=self._connections),
            timeout=aiohttp.ClientTimeout(total=60),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.http is not None:
            await self.http.close()

    async def begin(
        self,
        base_url: str,
        provider: str = "google",
        *,
        intent: str = "login",
        headers: Mapping[str, str] | None = None,
        **query: str,
    ) -> tuple[dict[str, Any], str]:
        """Initiation: the provider details and the binding cookie's value."""
        assert self.http is not None
        params = {"redirect_uri": CALLBACK_URL.format(name=provider), "intent": intent, **query}
        sent = {"Accept": "application/json", **(headers or {})}
        async with self.http.get(
            f"{base_url}/v1/auth/{provider}", params=params, headers=sent
        ) as response:
            text = await response.text()
            if response.status != 200:
                raise SignInError(f"initiation answered {response.status}: {text[:300]}")
            binding = response.cookies["__Host-authgate_binding"].value
            return await response.json(), binding

    async def callback(
        self,
        base_url: str,
        provider: str,
        params: Mapping[str, str],
        *,
        binding: str | None,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
    ) -> CallbackResult:
        assert self.http is not None
        sent = {"User-Agent": "authgate-proof", **(headers or {})}
        if binding is not None:
            sent["Cookie"] = f"__Host-authgate_binding={binding}"
        url = f"{base_url}/v1/auth/{provider}/callback"
        if method == "POST":
            request = self.http.post(url, data=dict(params), headers=sent, allow_redirects=False)
        else:
            request = self.http.get(url, params=dict(params), headers=sent, allow_redirects=False)
        async with request as response:
            body = await response.text()
            morsel = response.cookies.get("session")
            return CallbackResult(
                status=response.status,
                location=response.headers.get("Location"),
                session=morsel.value if morsel is not None and morsel.value else None,
                body=body,
            )

    async def complete(
        self,
        base_url: str,
        provider: str = "google",
        *,
        user: FakeUser | None = None,
        intent: str = "login",
        finish_on: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> CallbackResult:
        """A whole sign-in: initiation on ``base_url``, the provider's page, the callback on
        ``finish_on`` (default: the same instance)."""
        details, binding = await self.begin(base_url, provider, intent=intent, headers=headers)
        back = await self.fake.authorize(details["authorizationUrl"], user=user)
        return await self.callback(
            finish_on or base_url,
            provider,
            back.params,
            binding=binding,
            method=back.method,
            headers=headers,
        )

    async def linked_providers(self, base_url: str, token: str) -> tuple[int, Any]:
        assert self.http is not None
        async with self.http.get(
            f"{base_url}/v1/account/providers", headers={"Authorization": f"Bearer {token}"}
        ) as response:
            text = await response.text()
            try:
                return response.status, await response.json(content_type=None)
            except ValueError:
                return response.status, text


def temp_folder(prefix: str = "authgate-proof-") -> Path:
    """A fresh temporary folder (the caller removes it)."""
    return Path(tempfile.mkdtemp(prefix=prefix))
