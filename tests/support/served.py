"""A real ``authgate serve`` on a free loopback port, run from a temporary copy of the default
configuration (SQLite and keys in a temporary directory, the development identity provider at
``/dev/idp``), and a small cookie-keeping browser stand-in that walks its pages over HTTP."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import attrs
import yaml

from tests.devidp.support import Browser, keep_cookies
from tests.support.ports import free_ports

ROOT = Path(__file__).resolve().parents[2]


def wait_ready(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Until the service at ``base`` answers its readiness probe (20 s at most)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"authgate serve exited early:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{base}/health/readiness", timeout=1) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"authgate serve did not become ready:\n{log.read_text()}")


def serve(
    workdir: Path, sections: Mapping[str, Mapping[str, Any]] | None = None, **env_vars: str
) -> Iterator[str]:
    """Run ``authgate serve`` on the default configuration in ``workdir``; its base address.

    ``sections``: keys to set in the configuration's sections (``{"app": {"url": ...}}``),
    the rest of the default configuration (its ``${...}`` included) kept as it is. The base
    address is the one origin the default configuration names, ``http://localhost:{PORT}``
    (``PUBLIC_HOST`` in ``env_vars`` names another host)."""
    shutil.copy(ROOT / "config.default.yaml", workdir / "config.yaml")
    if sections:
        data = yaml.safe_load((workdir / "config.yaml").read_text())
        for name, values in sections.items():
            data[name] = {**data.get(name, {}), **values}
        (workdir / "config.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    port, metrics_port = free_ports(2)
    env = {
        **os.environ,
        "PORT": str(port),
        "METRICS_PORT": str(metrics_port),  # not the default 9464: parallel runs would collide
        "OTEL_SDK_DISABLED": "true",
        **env_vars,
    }
    log = workdir / "serve.log"
    authgate = Path(sys.executable).with_name("authgate")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(authgate), "serve", "--config", "config.yaml"],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://{env_vars.get('PUBLIC_HOST', 'localhost')}:{port}"
    try:
        wait_ready(base, process, log)
        yield base
    finally:
        stop(process)
        # Nothing secret reaches the log (codes, tokens and cookies never do).
        text = log.read_text()
        assert "code=" not in text and "id_token" not in text and "session=" not in text, text


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (in-flight requests finish), then SIGKILL after 15 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@attrs.define
class ServedBrowser:
    """A browser against the service at ``base``: it keeps cookies by name (one host, so names
    suffice) and sends them itself, since aiohttp's jar would drop the service's Secure and
    ``__Host-`` cookies on http; it follows no redirect, so that a test sees each one."""

    http: aiohttp.ClientSession
    base: str
    cookies: dict[str, str] = attrs.field(factory=dict)

    @property
    def session(self) -> str | None:
        return self.cookies.get("session")

    @property
    def same_origin(self) -> dict[str, str]:
        """What a browser sends with a request from one of the service's own pages."""
        return {"Origin": self.base, "Sec-Fetch-Site": "same-origin"}

    def callback(self, provider: str) -> str:
        return f"{self.base}/v1/auth/{provider}/callback"

    def _keep(self, response: aiohttp.ClientResponse) -> None:
        keep_cookies(self.cookies, response.headers.getall("Set-Cookie", ()))

    async def request(
        self, method: str, url: str, headers: Mapping[str, str] | None = None, **kwargs: Any
    ) -> aiohttp.ClientResponse:
        """One request to the service (``url`` absolute or a path), its body read."""
        if url.startswith("http"):
            assert url.startswith(self.base + "/"), f"not the service's address: {url}"
        else:
            url = self.base + url
        sent = dict(headers or {})
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        response = await self.http.request(
            method, url, headers=sent, allow_redirects=False, **kwargs
        )
        await response.read()
        self._keep(response)
        return response

    # -- signing in at authgate, through the development provider --------------------------

    async def start(
        self, provider: str, intent: str = "register", bearer: str | None = None
    ) -> aiohttp.ClientResponse:
        """``GET /v1/auth/{provider}`` as the service's own page (the demo) sends it."""
        query = urlencode({"redirect_uri": self.callback(provider), "intent": intent})
        headers = {"Accept": "application/json", **self.same_origin}
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        return await self.request("GET", f"/v1/auth/{provider}?{query}", headers)

    async def authorization_url(self, provider: str, intent: str = "register") -> str:
        """A started sign-in's address at the development provider."""
        started = await self.start(provider, intent)
        assert started.status == 200, await started.text()
        url: str = (await started.json())["authorizationUrl"]
        assert url.startswith(f"{self.base}/dev/idp/authorize?"), url
        return url

    # The development provider's page and the way back, as the in-process browser answers
    # them (both go through ``self.request``).
    decide = Browser.decide
    back_to_service = Browser.back_to_service

    async def sign_in(
        self, provider: str, user: str, intent: str = "register"
    ) -> aiohttp.ClientResponse:
        """The whole flow; the callback's answer, checked to be no error."""
        url = await self.authorization_url(provider, intent)
        answer = await self.back_to_service(await self.decide(url, user))
        assert answer.status == 302, await answer.text()
        assert "error=" not in answer.headers["Location"], answer.headers["Location"]
        return answer
