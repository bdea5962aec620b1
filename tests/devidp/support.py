"""The whole service with the development identity provider, on a real loopback port (the
adapters call the provider over HTTP, so its issuer must be the address the service answers
on), and a small cookie-keeping browser stand-in that walks the sign-in flow."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from html import unescape
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import aiohttp
import attrs
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from joserfc import jwt
from joserfc.jwk import ECKey

from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app.config import Config, parse
from authgate.entrypoints.app.serving import build_app
from tests.support.ports import free_port, free_ports

APP_URL = "https://app.example.com"
PROVIDERS = ("google", "facebook", "apple")
GOOGLE_SECRET = "dev-google-secret"
FACEBOOK_SECRET = "dev-facebook-secret"
APPLE_CLIENT_ID = "dev.authgate.services"
APPLE_TEAM_ID = "DEVTEAM001"
APPLE_KEY_ID = "DEVKEY0001"

Client = TestClient[web.Request, web.Application]


def dev_config_data(tmp_path: Path, port: int) -> dict[str, Any]:
    """The default configuration's shape, on ``port``, with memory storage."""
    base = f"http://127.0.0.1:{port}"
    idp = f"{base}/dev/idp"
    return {
        "environment": "development",
        "rest": {"port": port, "host": "127.0.0.1"},
        "otel": {"service": {"name": "authgate-test"}, "sdk": {"disabled": True}},
        # parallel runs would collide on the default scrape port (9464)
        "metrics": {"port": free_ports(1, besides=(port,))[0]},
        "app": {
            "url": APP_URL,
            "callback_urls": [
                f"{host}/v1/auth/{p}/callback"
                for p in PROVIDERS
                for host in (base, f"http://localhost:{port}")
            ],
        },
        "database": {"url": "memory://"},
        "session": {"keys_file": str(tmp_path / "keys.json"), "generate_keys": True},
        "ratelimit": {
            "storage": "memory://",
            "callback": "1000/minute",
            "initiation": "1000/minute",
        },
        "dev": {"identity_provider": True},
        "providers": {
            "google": {
                "issuer": idp,
                "client_id": "authgate-dev-google",
                "client_secret": GOOGLE_SECRET,
                "scopes": ["openid", "profile", "email"],
            },
            "facebook": {
                "authorization_endpoint": f"{idp}/authorize",
                "token_endpoint": f"{idp}/token",
                "profile_endpoint": f"{idp}/me?fields=id,name,email",
                "client_id": "authgate-dev-facebook",
                "client_secret": FACEBOOK_SECRET,
                "scopes": ["public_profile", "email"],
            },
            "apple": {
                "issuer": idp,
                "client_id": APPLE_CLIENT_ID,
                "token_endpoint_auth": "apple_client_secret_jwt",
                "team_id": APPLE_TEAM_ID,
                "key_id": APPLE_KEY_ID,
                "private_key_file": str(tmp_path / "var" / "apple.pem"),
                "response_mode": "form_post",
                "scopes": ["name", "email"],
            },
        },
    }


def to_config(data: Mapping[str, Any]) -> Config:
    return parse(yaml.safe_dump(dict(data), sort_keys=False))


@attrs.define
class Service:
    """A running service and what a test needs to know about it."""

    client: Client
    config: Config
    tmp_path: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.config.rest.port}"

    @property
    def issuer(self) -> str:
        return f"{self.base}/dev/idp"

    def callback(self, provider: str) -> str:
        return f"{self.base}/v1/auth/{provider}/callback"

    def apple_key(self) -> ECKey:
        pem = (self.tmp_path / "var" / "apple.pem").read_bytes()
        return ECKey.import_key(pem)

    def apple_secret(self, **overrides: Any) -> str:
        """A client-secret JWT as the Apple adapter mints it (fields overridable)."""
        now = int(time.time())
        claims = {
            "iss": APPLE_TEAM_ID,
            "sub": APPLE_CLIENT_ID,
            "aud": self.issuer,
            "iat": now,
            "exp": now + 300,
        }
        key = overrides.pop("key", None) or self.apple_key()
        kid = overrides.pop("kid", APPLE_KEY_ID)
        claims.update(overrides)
        return jwt.encode({"alg": "ES256", "kid": kid}, claims, key, algorithms=["ES256"])

    def session_key(self) -> ECKey:
        keys = json.loads((self.tmp_path / "keys.json").read_text())["keys"]
        return ECKey.import_key(keys[0])


StartService = Callable[..., Awaitable[Service]]


async def start_service(
    aiohttp_client: Any, tmp_path: Path, overrides: Mapping[str, Any] | None = None
) -> Service:
    port = free_port()
    data = dev_config_data(tmp_path, port)
    for key, value in (overrides or {}).items():
        if isinstance(value, dict) and isinstance(data.get(key), dict) and key != "providers":
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    config = to_config(data)
    app = await assembly.create_app(config, build_app)
    server = TestServer(app, host="127.0.0.1", port=port)
    client: Client = await aiohttp_client(server)
    return Service(client, config, tmp_path)


_HIDDEN = re.compile(r'<input type="hidden" name="([^"]*)" value="([^"]*)">')
_FORM_ACTION = re.compile(r'<form id="form-post" method="post" action="([^"]*)">')


def hidden_fields(html: str) -> dict[str, str]:
    return {unescape(k): unescape(v) for k, v in _HIDDEN.findall(html)}


def form_action(html: str) -> str:
    m = _FORM_ACTION.search(html)
    assert m is not None, html
    return unescape(m.group(1))


def path_qs(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def keep_cookies(jar: dict[str, str], set_cookies: Iterable[str]) -> None:
    """What a browser keeps of ``Set-Cookie`` answers, by name: a value, or, at Max-Age=0,
    nothing."""
    for header in set_cookies:
        morsel = next(iter(SimpleCookie(header).values()))
        if morsel["max-age"] == "0":
            jar.pop(morsel.key, None)
        else:
            jar[morsel.key] = morsel.value


@attrs.define
class Browser:
    """Keeps cookies by name (one host, so names suffice) and sends them explicitly: the test
    client's jar would drop Secure cookies on http."""

    service: Service
    cookies: dict[str, str] = attrs.field(factory=dict)

    def cookie_header(self, path: str = "/") -> dict[str, str]:
        # Every cookie of the service has Path=/ (the binding cookie's __Host- prefix needs it).
        jar = dict(self.cookies)
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items())} if jar else {}

    def keep(self, response: aiohttp.ClientResponse) -> None:
        keep_cookies(self.cookies, response.headers.getall("Set-Cookie", ()))

    async def request(
        self, method: str, url: str, headers: Mapping[str, str] | None = None, **kwargs: Any
    ) -> aiohttp.ClientResponse:
        target = path_qs(url) if url.startswith("http") else url
        all_headers = {**self.cookie_header(urlsplit(target).path), **(headers or {})}
        response = await self.service.client.request(
            method, target, headers=all_headers, allow_redirects=False, **kwargs
        )
        await response.read()
        self.keep(response)
        return response

    @property
    def session(self) -> str | None:
        return self.cookies.get("session")

    async def start(
        self, provider: str, intent: str = "register", bearer: str | None = None
    ) -> str:
        """Start a sign-in; the authorization URL."""
        query = urlencode({"redirect_uri": self.service.callback(provider), "intent": intent})
        # As a browser on the service's own page (the demo) sends it with every request.
        headers = {"Accept": "application/json", "Sec-Fetch-Site": "same-origin"}
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        response = await self.request("GET", f"/v1/auth/{provider}?{query}", headers)
        assert response.status == 200, await response.text()
        url: str = (await response.json())["authorizationUrl"]
        assert url.startswith(self.service.issuer + "/authorize?")
        return url

    async def decide(self, authorization_url: str, user: str | None) -> aiohttp.ClientResponse:
        """Answer the provider's page: choose ``user``, or deny with None."""
        fields = dict(parse_qsl(urlsplit(authorization_url).query))
        fields |= {"user": user} if user is not None else {"deny": "1"}
        return await self.request("POST", "/dev/idp/authorize", data=fields)

    async def back_to_service(self, answer: aiohttp.ClientResponse) -> aiohttp.ClientResponse:
        """Deliver the provider's answer to the callback: a redirect, or a form_post page."""
        if answer.status == 302:
            return await self.request("GET", answer.headers["Location"])
        assert answer.status == 200, await answer.text()
        html = await answer.text()
        return await self.request("POST", form_action(html), data=hidden_fields(html))

    async def sign_in(
        self, provider: str, user: str = "ada", intent: str = "register", **kw: Any
    ) -> aiohttp.ClientResponse:
        """The whole flow; the callback's answer."""
        url = await self.start(provider, intent, **kw)
        return await self.back_to_service(await self.decide(url, user))
