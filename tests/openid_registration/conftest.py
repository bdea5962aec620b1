"""The service as an OpenID Provider that lets clients register (RFC 7591), on memory, SQLite
and PostgreSQL, with the fake identity provider behind it; and a registrant driving the
registration endpoint over HTTP."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import ClientResponse

from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app.build import Resources
from authgate.services.openid.registration import ClientAdministration
from tests.app.conftest import MakeService, make_service  # noqa: F401
from tests.fakeidp import FakeIdP, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
from tests.openid.conftest import op_config
from tests.openid.harness import Op
from tests.support.stores import service_database_url

STORES = ("memory", "sqlite", "postgres")
NATIVE_REDIRECT = "http://127.0.0.1/callback"
WEB_REDIRECT = "https://registered.example.com/cb"
REGISTRATION: dict[str, Any] = {"enabled": True}


@attrs.define
class Registrar:
    """The provider (:class:`Op`: the browser and the application) and what the operator
    does beside it (initial access tokens, as ``authgate clients token`` makes them)."""

    op: Op

    @property
    def resources(self) -> Resources:
        return self.op.client.app[assembly.RESOURCES]

    @property
    def administration(self) -> ClientAdministration:
        return ClientAdministration(
            units=self.resources.stores.units,
            clock=self.resources.shared.clock,
            reserved=frozenset({"web", "third", "native"}),
        )

    async def initial_token(self, lifetime: dt.timedelta = dt.timedelta(hours=1)) -> str:
        token, _ = await self.administration.initial_token(lifetime)
        return token

    async def post(self, metadata: Any, token: str | None = None) -> ClientResponse:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return await self.op.client.post("/oauth2/register", json=metadata, headers=headers)

    async def register(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """A registration with a new initial access token: the client information."""
        answer = await self.post(metadata, await self.initial_token())
        assert answer.status == 201, await answer.text()
        body = await answer.json()
        assert isinstance(body, dict)
        return body

    async def manage(
        self, method: str, body: dict[str, Any], token: str | None = None, **kwargs: Any
    ) -> ClientResponse:
        """GET, PUT or DELETE on the client's configuration endpoint."""
        path = "/oauth2/register/" + body["client_id"]
        bearer = token if token is not None else body["registration_access_token"]
        headers = {"Authorization": f"Bearer {bearer}"}
        return await self.op.client.request(method, path, headers=headers, **kwargs)


async def start(
    make: MakeService, fake: FakeIdP, clock: SettableClock, url: str, **extra: Any
) -> Registrar:
    registration = {**REGISTRATION, **extra.pop("registration", {})}
    config = op_config(fake, url, registration=registration, **extra)
    client = await make(config, clock=clock)
    return Registrar(Op(client, fake, clock))


@pytest.fixture(params=STORES)
async def registrar(
    request: pytest.FixtureRequest,
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
    tmp_path: Path,
) -> Registrar:
    """Registration enabled (initial access tokens), on memory, SQLite and PostgreSQL."""
    url = service_database_url(request, request.param, tmp_path)
    return await start(make_service, fake_idp, idp_clock, url)


@pytest.fixture
def start_registrar(
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
) -> Any:
    """A provider on memory with the registration settings (and others) a test gives."""

    async def started(**extra: Any) -> Registrar:
        return await start(make_service, fake_idp, idp_clock, "memory://", **extra)

    return started
