"""The service with passkeys on, and a driver that adds passkeys and signs in with them through
HTTP as a browser with a platform authenticator would (tests/support/webauthn.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import ClientResponse

from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.support.webauthn import SoftAuthenticator

from .conftest import APP_URL, CALLBACK_URL, PROVIDERS, MakeService, SignIn, merge, session_of

ORIGIN = APP_URL  # https://app.example.com: the application's pages run the ceremonies
RP_ID = "example.com"
BINDING = "__Host-authgate_binding"
ADA = FakeUser(sub="ada-1", email="ada@example.com", name="Ada Lovelace")
BOB = FakeUser(sub="bob-2", email="bob@example.com", name="Bob Example")


def passkeys_config(fake: FakeIdP, database_url: str, **extra: Any) -> dict[str, Any]:
    return merge(
        {
            "app": {
                "url": APP_URL,
                "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS],
            },
            "providers": {p: fake.config(p) for p in PROVIDERS},
            "database": {"url": database_url},
            "passkeys": {
                "enabled": True,
                "rp_id": RP_ID,
                "rp_name": "authgate tests",
                "origins": [ORIGIN],
            },
        },
        extra,
    )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def browser(binding: str | None) -> dict[str, str]:
    return {"Cookie": f"{BINDING}={binding}"} if binding else {}


@attrs.define
class Passkeys:
    """Drives the passkey ceremonies over HTTP. A browser is its binding cookie's value."""

    signin: SignIn

    @property
    def client(self) -> Any:
        return self.signin.client

    @property
    def clock(self) -> SettableClock:
        return self.signin.clock

    async def registered(self, user: FakeUser = ADA) -> str:
        """A new account through google, freshly signed in: its session token."""
        return session_of(await self.signin.complete("google", user=user, intent="register"))

    async def registration_options(
        self, token: str, binding: str | None = None
    ) -> tuple[dict[str, Any], str]:
        answer = await self.client.post(
            "/v1/account/passkeys/registration/options",
            headers={**bearer(token), **browser(binding)},
        )
        assert answer.status == 200, await answer.text()
        kept = binding or answer.cookies[BINDING].value
        return await answer.json(), kept

    async def register(
        self, token: str, credential: dict[str, Any], binding: str | None, **extra: Any
    ) -> ClientResponse:
        return await self.client.post(
            "/v1/account/passkeys/registration",
            json={**credential, **extra},
            headers={**bearer(token), **browser(binding)},
        )

    async def add(
        self, token: str, authenticator: SoftAuthenticator, name: str | None = None
    ) -> dict[str, Any]:
        """A whole registration; the passkey as the service describes it."""
        options, binding = await self.registration_options(token)
        extra = {"name": name} if name is not None else {}
        answer = await self.register(token, authenticator.create(options, ORIGIN), binding, **extra)
        assert answer.status == 201, await answer.text()
        added = await answer.json()
        assert isinstance(added, dict)
        return added

    async def authentication_options(
        self, binding: str | None = None
    ) -> tuple[dict[str, Any], str]:
        answer = await self.client.post(
            "/v1/passkeys/authentication/options", headers=browser(binding)
        )
        assert answer.status == 200, await answer.text()
        kept = binding or answer.cookies[BINDING].value
        return await answer.json(), kept

    async def authenticate(
        self, assertion: dict[str, Any], binding: str | None, **extra: Any
    ) -> ClientResponse:
        return await self.client.post(
            "/v1/passkeys/authentication", json={**assertion, **extra}, headers=browser(binding)
        )

    async def sign_in(self, authenticator: SoftAuthenticator, **get: Any) -> ClientResponse:
        """A whole passkey sign-in (options, the authenticator's assertion, the answer)."""
        options, binding = await self.authentication_options()
        return await self.authenticate(authenticator.get(options, ORIGIN, **get), binding)

    async def listed(self, token: str) -> list[dict[str, Any]]:
        answer = await self.client.get("/v1/account/passkeys", headers=bearer(token))
        assert answer.status == 200, await answer.text()
        body = await answer.json()
        return list(body["passkeys"])

    async def account_of(self, token: str) -> dict[str, Any]:
        answer = await self.client.get("/v1/account", headers=bearer(token))
        assert answer.status == 200, await answer.text()
        body = await answer.json()
        assert isinstance(body, dict)
        return body

    async def audit(self) -> list[Any]:
        from authgate.entrypoints.app import build as assembly

        return await self.client.app[assembly.RESOURCES].stores.events.recent(1000)


async def start_passkeys(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    database_url: str = "memory://",
    **extra: Any,
) -> Passkeys:
    client = await make_service(passkeys_config(fake_idp, database_url, **extra), clock=idp_clock)
    return Passkeys(SignIn(client, fake_idp, idp_clock))


def database_url(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'authgate.db'}"
    return str(request.getfixturevalue("clean_postgres_url"))
