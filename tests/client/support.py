"""A real ``authgate serve`` process with its development identity provider on a loopback
port, and a sign-in through it over HTTP that yields a real session token."""

from __future__ import annotations

import base64
import json
import signal
import socket
import subprocess
import sys
import time
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import aiohttp
import pytest
import yaml
from joserfc import jwt
from joserfc.jwk import ECKey

from tests.devidp.support import dev_config_data, free_port

ISSUER = "https://auth.example.test"
AUDIENCE = "app.example.test"


class Authgate:
    """``authgate serve`` on a fixed port (restartable: the dev provider's issuer is the port),
    with ``session.issuer`` / ``session.audience`` set to :data:`ISSUER` / :data:`AUDIENCE`."""

    def __init__(self, tmp_path: Path, extra: dict[str, Any] | None = None) -> None:
        """``extra``: top-level configuration keys to add (``clients``, say)."""
        self.tmp_path = tmp_path
        self.port = free_port()
        self.process: subprocess.Popen[str] | None = None
        config = dev_config_data(tmp_path, self.port)
        config["session"] = {**config["session"], "issuer": ISSUER, "audience": AUDIENCE}
        config.update(extra or {})
        self.config_path = tmp_path / "authgate.yaml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def keys_file(self) -> Path:
        return self.tmp_path / "keys.json"

    def start(self) -> None:
        command = ["-m", "authgate.entrypoints.cli", "serve", "--config", str(self.config_path)]
        self.process = subprocess.Popen(
            [sys.executable, *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None:
                    pytest.fail(f"authgate serve exited: {self.process.communicate()[1]}")
                if time.monotonic() > deadline:
                    pytest.fail("authgate serve did not start")
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            stderr = self.process.communicate(timeout=20)[1]
            assert self.process.returncode == 0, stderr
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def private_keys(self) -> list[dict[str, Any]]:
        keys: list[dict[str, Any]] = json.loads(self.keys_file.read_text())["keys"]
        return keys

    def signing_key(self) -> ECKey:
        return ECKey.import_key(self.private_keys()[0])

    def mint(
        self, header: dict[str, Any] | None = None, key: ECKey | None = None, **claims: Any
    ) -> str:
        """A token signed with authgate's own current key (or ``key``), claims as authgate's
        unless overridden (None removes one)."""
        key = key or self.signing_key()
        now = int(time.time())
        body = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "acc-minted",
            "iat": now,
            "nbf": now,
            "exp": now + 600,
            "jti": "j",
            "scope": "account:read account:manage",
            "provider": "google",
        }
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode({"alg": "ES256", "kid": key.kid, **(header or {})}, body, key)

    async def sign_in(self, user: str = "ada", provider: str = "google") -> str:
        """Sign ``user`` in through the development provider like a browser; the ``session``
        cookie authgate sets."""
        cookies: dict[str, str] = {}

        def keep(response: aiohttp.ClientResponse) -> None:
            for header in response.headers.getall("Set-Cookie", ()):
                morsel = next(iter(SimpleCookie(header).values()))
                cookies[morsel.key] = morsel.value

        def sent() -> dict[str, str]:
            return {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}

        # The test client's jar would drop the Secure cookies on http: they are kept by hand.
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
            query = urlencode(
                {"redirect_uri": f"{self.base}/v1/auth/{provider}/callback", "intent": "register"}
            )
            async with http.get(
                f"{self.base}/v1/auth/{provider}?{query}",
                headers={"Accept": "application/json", "Sec-Fetch-Site": "same-origin"},
            ) as r:
                assert r.status == 200, await r.text()
                keep(r)
                url = (await r.json())["authorizationUrl"]
            fields = dict(parse_qsl(urlsplit(url).query)) | {"user": user}
            async with http.post(
                f"{self.base}/dev/idp/authorize", data=fields, allow_redirects=False
            ) as r:
                assert r.status == 302, await r.text()
                callback = r.headers["Location"]
            async with http.get(callback, headers=sent(), allow_redirects=False) as r:
                assert r.status == 302, await r.text()
                keep(r)
        return cookies["session"]


def claims_of(token: str) -> dict[str, Any]:
    """The unverified payload of a JWT (to compare with what the verifier answers)."""
    payload = token.split(".")[1]
    padded = payload + "=" * (-len(payload) % 4)
    result: dict[str, Any] = json.loads(base64.urlsafe_b64decode(padded))
    return result


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
