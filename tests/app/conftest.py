"""The whole service, built by its composition root from a YAML configuration, on loopback."""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient, TestServer

from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app.config import Config, parse
from authgate.entrypoints.app.serving import build_app
from authgate.entrypoints.rest.serving import AccessLogger
from authgate.ports.clock import Clock
from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
from tests.support.ports import free_port
from tests.support.stores import service_database_url

APP_URL = "https://app.example.com"

Client = TestClient[web.Request, web.Application]
MakeService = Callable[..., Awaitable[Client]]


def base_config(tmp_path: Path) -> dict[str, Any]:
    return {
        "environment": "test",
        "rest": {"port": 8080},
        "otel": {"service": {"name": "authgate-test"}, "sdk": {"disabled": True}},
        # The scrape listener of its own, as by default, on a port of its own: services of
        # parallel runs on one machine would collide on the default 9464.
        "metrics": {"port": free_port()},
        "app": {"url": APP_URL, "callback_urls": []},
        "database": {"url": "memory://"},
        "session": {"keys_file": str(tmp_path / "keys.json"), "generate_keys": True},
        "ratelimit": {"storage": "memory://"},
        "providers": {},
    }


def merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "providers":
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(tmp_path: Path, overrides: dict[str, Any]) -> Config:
    # sort_keys=False: the providers' order is the order of the error messages
    return parse(yaml.safe_dump(merge(base_config(tmp_path), overrides), sort_keys=False))


@pytest.fixture
def make_service(aiohttp_client: Any, tmp_path: Path) -> MakeService:
    """``await make_service({...overrides}, clock=...)``: a client of the whole service."""

    async def start(overrides: dict[str, Any] | None = None, clock: Clock | None = None) -> Client:
        config = load_config(tmp_path, overrides or {})
        app = await assembly.create_app(config, build_app, clock)
        # The service's own access logger, as `authgate serve` runs it (no query strings).
        server = TestServer(app)
        await server.start_server(
            access_log_class=AccessLogger, access_log=logging.getLogger("authgate.access")
        )
        client: Client = await aiohttp_client(server)
        return client

    return start


CALLBACK_URL = "https://api.example.com/v1/auth/{name}/callback"
PROVIDERS = ("google", "facebook", "apple")


@attrs.define
class SignIn:
    """Drives sign-ins through the service and the fake provider, as a browser would."""

    client: Client
    idp: FakeIdP
    clock: SettableClock

    async def start(
        self, provider: str = "google", *, bearer: str | None = None, **query: str
    ) -> ClientResponse:
        """``GET /v1/auth/{provider}``; ``bearer``: the signed-in caller's session token (for
        ``intent=link`` and ``intent=reauthenticate``)."""
        params = {"redirect_uri": CALLBACK_URL.format(name=provider), **query}
        headers = {"Accept": "application/json"}
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        return await self.client.get(f"/v1/auth/{provider}", params=params, headers=headers)

    async def begin(
        self, provider: str = "google", *, bearer: str | None = None, **query: str
    ) -> tuple[dict[str, Any], str]:
        """Start a sign-in; returns the provider details and the binding cookie's value."""
        response = await self.start(provider, bearer=bearer, **query)
        assert response.status == 200, await response.text()
        binding = response.cookies["__Host-authgate_binding"].value
        return await response.json(), binding

    async def callback(
        self,
        provider: str,
        params: dict[str, str],
        *,
        binding: str | None,
        method: str = "GET",
        headers: dict[str, str] | None = None,
    ) -> ClientResponse:
        path = f"/v1/auth/{provider}/callback"
        sent = dict(headers or {})
        if binding is not None:
            sent["Cookie"] = f"__Host-authgate_binding={binding}"
        if method == "POST":
            return await self.client.post(path, data=params, headers=sent, allow_redirects=False)
        return await self.client.get(path, params=params, headers=sent, allow_redirects=False)

    async def complete(
        self,
        provider: str = "google",
        *,
        user: FakeUser | None = None,
        deny: bool = False,
        headers: dict[str, str] | None = None,
        bearer: str | None = None,
        **query: str,
    ) -> ClientResponse:
        """A whole sign-in: initiation, the provider's page, the callback."""
        details, binding = await self.begin(provider, bearer=bearer, **query)
        back = await self.idp.authorize(details["authorizationUrl"], user=user, deny=deny)
        return await self.callback(
            provider, back.params, binding=binding, method=back.method, headers=headers
        )


def session_of(response: ClientResponse) -> str:
    """The session token a successful callback set (its redirect carries no error)."""
    assert response.status == 302, response.status
    assert "error=" not in response.headers["Location"], response.headers["Location"]
    return response.cookies["session"].value


@pytest.fixture
async def signin(make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock) -> SignIn:  # noqa: F811
    """The service configured with the fake's three providers, and a driver for sign-ins."""
    client = await make_service(
        {
            "app": {
                "url": APP_URL,
                "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS],
            },
            "providers": {p: fake_idp.config(p) for p in PROVIDERS},
        },
        clock=idp_clock,
    )
    return SignIn(client, fake_idp, idp_clock)


# -- provider events ---------------------------------------------------------------

STORES = ("memory", "sqlite", "postgres")


@attrs.define
class Events:
    """The service with every event receiver on (google: back-channel logout and RISC; apple:
    notifications) on one store, and a driver for sign-ins."""

    signin: SignIn
    idp: FakeIdP

    @property
    def client(self) -> Client:
        return self.signin.client

    async def signed_in(self, provider: str = "google", user: FakeUser | None = None) -> str:
        """A registered user's session token (a whole sign-in through the fake)."""
        answer = await self.signin.complete(provider, user=user, intent="register")
        assert answer.status == 302, answer.headers
        return answer.cookies["session"].value

    async def status(self, token: str) -> int:
        """What the session token gets from GET /v1/account (200 live, 401 ended)."""
        answer = await self.client.get("/v1/account", headers={"Authorization": f"Bearer {token}"})
        return answer.status

    async def audit(self) -> list[Any]:
        return await self.client.app[assembly.RESOURCES].stores.events.recent(1000)


def events_config(
    fake: FakeIdP, database_url: str, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    providers = {p: fake.config(p) for p in PROVIDERS}
    providers["google"] |= {"backchannel_logout": True, "notifications": True}
    providers["apple"] |= {"notifications": True}
    return merge(
        {
            "app": {
                "url": APP_URL,
                "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS],
            },
            "providers": providers,
            "database": {"url": database_url},
        },
        extra or {},
    )


@pytest.fixture(params=STORES)
async def events(
    request: pytest.FixtureRequest,
    make_service: MakeService,
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
    tmp_path: Path,
) -> Events:
    """:class:`Events` on memory, SQLite and PostgreSQL."""
    url = service_database_url(request, request.param, tmp_path)
    client = await make_service(events_config(fake_idp, url), clock=idp_clock)
    return Events(SignIn(client, fake_idp, idp_clock), fake_idp)
