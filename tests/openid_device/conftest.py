"""The service as an OpenID Provider with device clients (RFC 8628), on memory, SQLite and
PostgreSQL, signing people in through the fake identity provider; and :class:`Device`, which
plays both the device (its requests and polls) and the person's browser (the verification
page, the sign-in page, the provider's page and the page's forms), all over HTTP."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import ClientResponse

from tests.app.conftest import MakeService, make_service  # noqa: F401
from tests.fakeidp import FakeIdP, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
from tests.openid.conftest import op_config
from tests.openid.harness import CLIENTS as CODE_CLIENTS
from tests.openid.harness import ISSUER, SAME_ORIGIN, Op, parse_page
from tests.support.stores import service_database_url

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
TV_SECRET = "tv-secret-of-more-than-thirty-two-characters"
CLIENTS: dict[str, Any] = {
    **CODE_CLIENTS,
    # a command-line tool: public, not first-party (the approval is its consent)
    "cli": {
        "name": "Deploy CLI",
        "type": "public",
        "grant_types": [DEVICE_GRANT, "refresh_token"],
        "allowed_scopes": ["openid", "profile", "offline_access"],
    },
    # a television app of authgate's own party: confidential
    "tv": {
        "name": "Living-room TV",
        "type": "confidential",
        "secrets": [TV_SECRET],
        "grant_types": [DEVICE_GRANT],
        "first_party": True,
    },
}
STORES = ("memory", "sqlite", "postgres")
DEVICE_COOKIE = "__Host-authgate_device"


def device_config(fake: FakeIdP, url: str = "memory://", **extra: Any) -> dict[str, Any]:
    config = op_config(fake, url, **extra)
    config["clients"] = CLIENTS
    return config


@attrs.define
class Device(Op):
    """A device client and a person's browser against the provider."""

    device_key: str | None = None  # the browser's verification-page cookie

    def cookies(self) -> dict[str, str]:
        jar = super().cookies()
        if self.device_key is not None:
            jar[DEVICE_COOKIE] = self.device_key
        return jar

    def keep_cookies(self, response: ClientResponse) -> None:
        super().keep_cookies(response)
        if DEVICE_COOKIE in response.cookies:
            self.device_key = response.cookies[DEVICE_COOKIE].value

    # -- the device -----------------------------------------------------------------------

    async def request(self, client_id: str = "cli", scope: str | None = "openid") -> ClientResponse:
        """POST /oauth2/device_authorization as the client authenticates."""
        form = {} if scope is None else {"scope": scope}
        headers = {}
        if client_id == "tv":
            raw = base64.b64encode(f"tv:{TV_SECRET}".encode()).decode()
            headers["Authorization"] = f"Basic {raw}"
        else:
            form["client_id"] = client_id
        return await self.client.post("/oauth2/device_authorization", data=form, headers=headers)

    async def start(self, client_id: str = "cli", scope: str = "openid") -> dict[str, Any]:
        response = await self.request(client_id, scope)
        assert response.status == 200, await response.text()
        assert response.headers["Cache-Control"] == "no-store"
        body = await response.json()
        assert isinstance(body, dict)
        return body

    async def poll(self, device_code: str, client_id: str = "cli") -> ClientResponse:
        form = {"grant_type": DEVICE_GRANT, "device_code": device_code}
        if client_id == "tv":
            return await self.token(form, client_id="tv", secret=TV_SECRET)
        return await self.token(form, client_id=client_id, secret=None)

    async def poll_error(self, device_code: str, client_id: str = "cli") -> str:
        response = await self.poll(device_code, client_id)
        assert response.status == 400, await response.text()
        error = (await response.json())["error"]
        assert isinstance(error, str)
        return error

    # -- the person -----------------------------------------------------------------------

    async def page(self, user_code: str | None = None) -> ClientResponse:
        """The verification page, with the code typed (as its form sends it)."""
        path = "/oauth2/device"
        if user_code is not None:
            return await self.open(path + "?" + _query(user_code))
        return await self.open(path)

    async def sign_in_there(self, page: ClientResponse) -> ClientResponse:
        """On the sign-in page the verification page showed: sign up with Google (the first
        time; later times sign in) and come back to the page."""
        return await self.sign_in_from_page(page, intent="Create an account")

    async def answer(self, page: ClientResponse, decision: str = "approve") -> ClientResponse:  # type: ignore[override]
        """Approve or deny on the approval page, as its buttons do."""
        assert page.status == 200, await page.text()
        form = parse_page(await page.text()).forms[0]
        data = [*form["fields"], ("decision", decision)]
        return await self.open(form["action"], method="POST", data=data, headers=SAME_ORIGIN)

    async def approve(self, user_code: str, decision: str = "approve") -> ClientResponse:
        """The whole of the person's part: open the page with the code, sign in when asked,
        approve (or deny)."""
        page = await self.page(user_code)
        if "Sign in with" in await page.text():
            page = await self.sign_in_there(page)
        return await self.answer(page, decision)


def _query(user_code: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"user_code": user_code})


@pytest.fixture(params=STORES)
async def device(
    request: pytest.FixtureRequest,
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
    tmp_path: Path,
) -> Device:
    """The provider on memory, SQLite and PostgreSQL."""
    url = service_database_url(request, request.param, tmp_path)
    client = await make_service(device_config(fake_idp, url), clock=idp_clock)
    return Device(client, fake_idp, idp_clock)


@pytest.fixture
async def memory_device(
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
) -> Device:
    """The provider on memory, with tight page limits (what no store decides)."""
    config = device_config(fake_idp, ratelimit={"device": "20/minute", "device_failures": "3/hour"})
    client = await make_service(config, clock=idp_clock)
    return Device(client, fake_idp, idp_clock)


__all__ = ["ISSUER", "Device"]
