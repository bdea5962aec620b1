"""A running ``authgate serve`` seen from outside: wait for readiness, sign in once through the
development identity provider, read the account. Plain ``urllib`` over real sockets, since the
service runs in another process (an installed wheel, a container)."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from tests.support.ports import free_ports

PROVIDERS = ("google", "facebook", "apple")


def dev_config(
    port: int, database_url: str, workdir: Path, host: str = "127.0.0.1"
) -> dict[str, Any]:
    """A development configuration on ``port`` with the development identity provider (google
    pointed at it) and the given database; secrets under ``workdir``."""
    base = f"http://127.0.0.1:{port}"
    return {
        "environment": "development",
        "rest": {"port": port, "host": host},
        "otel": {"service": {"name": "authgate-install-test"}, "sdk": {"disabled": True}},
        # parallel runs would collide on the default 9464
        "metrics": {"port": free_ports(1, besides=(port,))[0]},
        "app": {
            "url": "https://app.example.com",
            "callback_urls": [f"{base}/v1/auth/google/callback"],
        },
        "database": {"url": database_url},
        "session": {"keys_file": str(workdir / "var" / "keys.json"), "generate_keys": True},
        "dev": {"identity_provider": True},
        "providers": {
            "google": {
                "issuer": f"{base}/dev/idp",
                "client_id": "authgate-dev-google",
                "client_secret": "dev-google-secret",
                "scopes": ["openid", "profile", "email"],
            }
        },
    }


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is an answer to look at, not to follow


_opener = urllib.request.build_opener(_NoRedirect)


class Browser:
    """Keeps cookies by name and sends them by hand: the service's cookies are Secure, which a
    cookie jar would not send over http."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookies: dict[str, str] = {}

    def request(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
    ) -> tuple[int, Mapping[str, str], bytes]:
        """Send one request (a path or an absolute URL on this service); status, headers, body."""
        parts = urlsplit(target)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        all_headers = dict(headers or {})
        if self.cookies:
            all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        data = None
        if form is not None:
            data = urlencode(form).encode()
            all_headers["Content-Type"] = "application/x-www-form-urlencoded"
        req = urllib.request.Request(self.base + path, data, all_headers, method=method)
        try:
            with _opener.open(req, timeout=10) as answer:
                status, head, body = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as e:
            status, head, body = e.code, e.headers, e.read()
        for header in head.get_all("Set-Cookie") or ():
            morsel = next(iter(SimpleCookie(header).values()))
            if morsel["max-age"] == "0":
                self.cookies.pop(morsel.key, None)
            else:
                self.cookies[morsel.key] = morsel.value
        return status, head, body

    def sign_in(
        self, user: str = "ada", app_url: str = "https://app.example.com"
    ) -> dict[str, Any]:
        """Register with google at the development provider as ``user`` (the service's
        ``app.url`` is ``app_url``); the account JSON."""
        callback = f"{self.base}/v1/auth/google/callback"
        query = urlencode({"redirect_uri": callback, "intent": "register"})
        # As the demo page sends it: a same-origin request that wants JSON.
        status, _, body = self.request(
            "GET",
            f"/v1/auth/google?{query}",
            {"Accept": "application/json", "Sec-Fetch-Site": "same-origin"},
        )
        assert status == 200, body
        authorization_url = json.loads(body)["authorizationUrl"]
        fields = dict(parse_qsl(urlsplit(authorization_url).query)) | {"user": user}
        status, head, body = self.request("POST", "/dev/idp/authorize", form=fields)
        assert status == 302, body
        status, head, body = self.request("GET", head["Location"])
        assert status == 302, body
        assert head["Location"] == f"{app_url}/onboarding", head["Location"]
        assert "session" in self.cookies, head
        status, _, body = self.request("GET", "/v1/account")
        assert status == 200, body
        account: dict[str, Any] = json.loads(body)
        return account


def wait_ready(base: str, alive: Callable[[], str | None], seconds: float = 60) -> None:
    """Wait until ``base``/health/readiness answers 200. ``alive`` returns why the service is
    gone (its log) when it stopped, else None."""
    deadline = time.monotonic() + seconds
    last = "no answer"
    while time.monotonic() < deadline:
        gone = alive()
        if gone is not None:
            raise AssertionError(f"authgate serve exited early:\n{gone}")
        try:
            with urllib.request.urlopen(f"{base}/health/readiness", timeout=2) as answer:
                if answer.status == 200:
                    return
                last = str(answer.status)
        except urllib.error.HTTPError as e:
            last = f"{e.code} {e.read()[:200]!r}"
        except OSError as e:
            last = str(e)
        time.sleep(0.2)
    raise AssertionError(f"authgate serve did not become ready in {seconds} s: {last}")


def run(*args: str, timeout: float = 600, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a command; on failure the assertion shows its output."""
    result = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )
    assert result.returncode == 0, (
        f"{args} -> {result.returncode}\n{result.stdout}\n{result.stderr}"
    )
    return result
