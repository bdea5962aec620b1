"""The whole service with applications registered, on memory, SQLite and PostgreSQL, signing
people in through the fake identity provider; and a driver that mints the provider's tokens
for them as the token endpoint will (a family started in the store, an access token signed by
the service's own signer), then calls userinfo, introspection and revocation over HTTP."""

from __future__ import annotations

import base64
import datetime as dt
import json
import secrets
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import ClientResponse

from authgate.domain.openid.records import (
    AccessTokenClaims,
    RefreshToken,
    TokenFamily,
    token_digest,
)
from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app.build import Resources
from tests.app.conftest import (
    APP_URL,
    CALLBACK_URL,
    PROVIDERS,
    Client,
    MakeService,
    SignIn,
    make_service,  # noqa: F401
)
from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
from tests.support.jwt import claims_of
from tests.support.stores import service_database_url

ISSUER = "https://auth.example.com"
SECRET = "web-secret-" + "w" * 32
API_SECRET = "api-secret-" + "a" * 32
OTHER_SECRET = "other-secret-" + "o" * 32
AUDIT_SECRET = "audit-secret-" + "u" * 32
SPA_ORIGIN = "https://spa.example.com"
FORM = "application/x-www-form-urlencoded"

CLIENTS: dict[str, Any] = {
    "web": {
        "name": "Web app",
        "type": "confidential",
        "secrets": [SECRET],
        "redirect_uris": ["https://web.example.com/cb"],
    },
    "other": {
        "name": "Other app",
        "type": "confidential",
        "token_endpoint_auth_method": "client_secret_post",
        "secrets": [OTHER_SECRET],
        "redirect_uris": ["https://other.example.com/cb"],
    },
    "api": {
        "name": "Back end",
        "type": "confidential",
        "secrets": [API_SECRET],
        "redirect_uris": ["https://api.example.com/cb"],
        "introspection": True,
    },
    "audit": {
        "name": "Audit service",
        "type": "confidential",
        "secrets": [AUDIT_SECRET],
        "redirect_uris": ["https://audit.example.com/cb"],
        "introspection": True,
    },
    "spa": {
        "name": "Single-page app",
        "type": "public",
        "redirect_uris": [SPA_ORIGIN + "/cb"],
    },
}
SECRETS = {"web": SECRET, "other": OTHER_SECRET, "api": API_SECRET, "audit": AUDIT_SECRET}
STORES = ("memory", "sqlite", "postgres")


def basic(client_id: str) -> dict[str, str]:
    raw = base64.b64encode(f"{client_id}:{SECRETS[client_id]}".encode()).decode()
    return {"Authorization": f"Basic {raw}"}


def service_config(database_url: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "rest": {"port": 8080, "public_url": ISSUER},
        "app": {
            "url": APP_URL,
            "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS],
        },
        "database": {"url": database_url},
        "clients": CLIENTS,
    }
    for key, value in (extra or {}).items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    return config


@attrs.frozen
class Person:
    """A signed-in person: the session token, its session and account."""

    session_token: str
    session_id: str
    account_id: str


@attrs.frozen
class Issued:
    """What the token endpoint would have issued: an access token, maybe a refresh token,
    and their family."""

    access_token: str
    family_id: str
    refresh_token: str | None
    claims: AccessTokenClaims


@attrs.define
class Provider:
    """One running service (an instance) with the fake provider's three providers and
    :data:`CLIENTS`, and what a test does with it."""

    client: Client
    idp: FakeIdP
    clock: SettableClock

    @property
    def resources(self) -> Resources:
        return self.client.app[assembly.RESOURCES]

    @property
    def signin(self) -> SignIn:
        return SignIn(self.client, self.idp, self.clock)

    async def sign_in(self, user: FakeUser | None = None) -> Person:
        answer = await self.signin.complete("google", user=user, intent="register")
        assert answer.status == 302, answer.headers
        token = answer.cookies["session"].value
        claims = claims_of(token)
        return Person(token, claims["sid"], claims["sub"])

    async def issue(
        self,
        person: Person,
        client_id: str = "web",
        scopes: tuple[str, ...] = ("openid", "email", "profile"),
        *,
        refresh: bool = True,
        lifetime: dt.timedelta = dt.timedelta(minutes=5),
    ) -> Issued:
        """Start a family for ``person`` and ``client_id`` in the store and sign an access
        token naming it (with a refresh token when ``refresh``), as a code redemption does."""
        now = self.clock.now()
        family_id = secrets.token_urlsafe(16)
        refresh_token = secrets.token_urlsafe(32) if refresh else None
        family = TokenFamily(
            family_id=family_id,
            client_id=client_id,
            account_id=person.account_id,
            session_id=person.session_id,
            created_at=now,
            expires_at=now + lifetime,
        )
        first = None
        if refresh_token is not None:
            first = RefreshToken(
                token_hash=token_digest(refresh_token),
                family_id=family_id,
                client_id=client_id,
                account_id=person.account_id,
                session_id=person.session_id,
                scopes=scopes,
                auth_time=now - dt.timedelta(minutes=1),
                created_at=now,
                expires_at=now + dt.timedelta(days=30),
            )
        async with self.resources.stores.units.begin() as tx:
            await tx.refresh_tokens.start_family(family, first)
        claims = AccessTokenClaims(
            issuer=ISSUER,
            subject=person.account_id,
            client_id=client_id,
            scopes=scopes,
            session_id=person.session_id,
            family_id=family_id,
            token_id=secrets.token_urlsafe(12),
            issued_at=now,
            expires_at=now + lifetime,
            auth_time=now - dt.timedelta(minutes=1),
        )
        return Issued(self.access_token(claims), family_id, refresh_token, claims)

    def access_token(self, claims: AccessTokenClaims) -> str:
        """``claims`` signed as the service signs its access tokens (the signer stamps iss)."""
        opened = self.resources.openid
        assert opened is not None
        payload = claims.claims()
        del payload["iss"]
        return opened.signer.access_token(payload)

    async def userinfo(self, token: str) -> ClientResponse:
        return await self.client.get(
            "/oauth2/userinfo", headers={"Authorization": f"Bearer {token}"}
        )

    async def introspect(self, token: str, client_id: str = "api", **form: str) -> ClientResponse:
        return await self.client.post(
            "/oauth2/introspect",
            data={"token": token, **form},
            headers=basic(client_id),
        )

    async def active(self, token: str) -> bool:
        """Whether introspection (and, for an access token, userinfo) says active; the two
        must agree."""
        answer = await self.introspect(token)
        assert answer.status == 200, await answer.text()
        body = await answer.json()
        if unverified_kind(token) == "access":
            info = await self.userinfo(token)
            assert info.status in (200, 401), await info.text()
            assert (info.status == 200) == body["active"], (info.status, body)
        return bool(body["active"])

    async def revoke(self, token: str, client_id: str = "web", **form: str) -> ClientResponse:
        return await self.client.post(
            "/oauth2/revoke", data={"token": token, **form}, headers=basic(client_id)
        )


def unverified_kind(token: str) -> str:
    if token.count(".") != 2:
        return "refresh"
    header = token.split(".")[0]
    typ = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))).get("typ")
    return "access" if typ == "at+jwt" else "session"


async def start_provider(
    make: MakeService,
    fake: FakeIdP,
    clock: SettableClock,
    url: str,
    extra: dict[str, Any] | None = None,
) -> Provider:
    config = service_config(url, extra)
    config["providers"] = {p: fake.config(p) for p in PROVIDERS}
    client = await make(config, clock=clock)
    return Provider(client, fake, clock)


@pytest.fixture(params=STORES)
async def provider(
    request: pytest.FixtureRequest,
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
    tmp_path: Path,
) -> Provider:
    """:class:`Provider` on memory, SQLite and PostgreSQL."""
    url = service_database_url(request, request.param, tmp_path)
    return await start_provider(make_service, fake_idp, idp_clock, url)


@pytest.fixture
async def memory_provider(
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
) -> Provider:
    """:class:`Provider` on memory only (for what no store decides)."""
    return await start_provider(make_service, fake_idp, idp_clock, "memory://")
