"""The service as the OpenID Provider of three registered clients, a loopback stand-in for the
clients' back-channel logout endpoints that checks every logout token as the OIDF suite checks
it, and helpers that make what the token endpoint will make (ID tokens, token families, the
session's clients) directly through the signer and the store.

Clients: ``webapp`` and ``admin`` (confidential, each with a back-channel logout endpoint at
the receiver) and ``mobile`` (public, no back-channel endpoint).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import secrets
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from authgate.domain.openid.logout import BACKCHANNEL_LOGOUT_EVENT
from authgate.domain.openid.records import RefreshToken, SessionClient, TokenFamily, token_digest
from authgate.entrypoints.app.build import RESOURCES, Resources
from tests.app.conftest import (  # noqa: F401 - fixtures
    APP_URL,
    CALLBACK_URL,
    Client,
    MakeService,
    SignIn,
    make_service,
    merge,
)
from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
from tests.support.jwt import claims_of
from tests.support.stores import service_database_url

ISSUER = "https://auth.example.com"
WEB_REDIRECT = "https://web.example.com/cb"
WEB_LOGOUT = "https://web.example.com/logged-out"
WEB_LOGOUT_WITH_QUERY = "https://web.example.com/bye?from=authgate"
ADMIN_LOGOUT = "https://admin.example.com/signed-out"
MOBILE_LOGOUT = "com.example.mobile:/logged-out"
SECRET = "s" * 40
RETRY_INITIAL = 1.0
RETRY_MAX = 4.0
GIVE_UP_AFTER = 60.0
STORES = ("memory", "sqlite", "postgres")


@attrs.define
class Delivery:
    """One POST the receiver got: the client it was for, its form, and what the checks found
    (an empty list: the token passed every check)."""

    client_id: str
    form: dict[str, str]
    content_type: str
    claims: dict[str, Any]
    header: dict[str, Any]
    problems: list[str]


@attrs.define
class Receiver:
    """The clients' back-channel logout endpoints (``/bc/{client_id}``) on loopback. Each
    logout token is checked as the OIDF back-channel plan checks it, against the service's
    published key set; a token that fails a check gets 400, as a client would answer.
    ``failing``: answer 503 to that many deliveries first (``None``: always)."""

    server: TestServer
    deliveries: list[Delivery] = attrs.field(factory=list)
    failing: int | None = 0
    service: Client | None = None
    answered: list[int] = attrs.field(factory=list)
    tokens: list[str] = attrs.field(factory=list)  # every logout token received
    delay: float = 0.0  # seconds each answer takes (a slow client)

    def uri(self, client_id: str) -> str:
        return str(self.server.make_url(f"/bc/{client_id}"))

    def for_session(self, session_id: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.claims.get("sid") == session_id]

    async def handle(self, request: web.Request) -> web.Response:
        client_id = request.match_info["client_id"]
        form = {k: v for k, v in (await request.post()).items() if isinstance(v, str)}
        self.tokens.append(form.get("logout_token", ""))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.failing is None or self.failing > 0:
            if self.failing is not None:
                self.failing -= 1
            self.answered.append(503)
            return web.Response(status=503)
        header, claims, problems = await self._check(form.get("logout_token", ""), client_id)
        if set(form) != {"logout_token"}:
            problems.append(f"unexpected form fields {sorted(form)}")
        self.deliveries.append(
            Delivery(client_id, form, request.content_type, claims, header, problems)
        )
        status = 400 if problems else 200
        self.answered.append(status)
        return web.Response(status=status)

    async def _check(
        self, token: str, client_id: str
    ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        assert self.service is not None, "the receiver checks tokens once the service runs"
        keys = KeySet.import_key_set(
            await (await self.service.get("/.well-known/jwks.json")).json()
        )
        try:
            decoded = jwt.decode(token, keys, algorithms=["RS256", "ES256"])
        except (JoseError, ValueError) as e:
            return {}, {}, [f"signature: {type(e).__name__}"]
        header, claims = dict(decoded.header), dict(decoded.claims)
        now = dt.datetime.now(dt.UTC).timestamp()
        problems = []
        if header.get("typ") != "logout+jwt":
            problems.append(f"typ {header.get('typ')!r}")
        if not header.get("kid"):
            problems.append("no kid")
        if claims.get("iss") != ISSUER:
            problems.append(f"iss {claims.get('iss')!r}")
        audience = claims.get("aud")
        if client_id not in (audience if isinstance(audience, list) else [audience]):
            problems.append(f"aud {audience!r}")
        iat = claims.get("iat")
        if not isinstance(iat, int) or iat > now + 300 or iat < now - 86400:
            problems.append(f"iat {iat!r}")
        exp = claims.get("exp")
        if not isinstance(exp, int) or not isinstance(iat, int) or exp <= iat:
            problems.append(f"exp {exp!r}")
        if not isinstance(claims.get("jti"), str) or not claims["jti"]:
            problems.append("no jti")
        if claims.get("events") != {BACKCHANNEL_LOGOUT_EVENT: {}}:
            problems.append(f"events {claims.get('events')!r}")
        if "sub" not in claims and "sid" not in claims:
            problems.append("neither sub nor sid")
        if "nonce" in claims:
            problems.append("a nonce")
        return header, claims, problems


@pytest.fixture
async def receiver(aiohttp_server: Any) -> Receiver:
    app = web.Application()
    holder: dict[str, Receiver] = {}

    async def handle(request: web.Request) -> web.Response:
        return await holder["receiver"].handle(request)

    app.router.add_post("/bc/{client_id}", handle)
    server: TestServer = await aiohttp_server(app)
    holder["receiver"] = found = Receiver(server)
    return found


def clients_config(receiver: Receiver) -> dict[str, Any]:
    return {
        "webapp": {
            "name": "Web <App> & Co",
            "type": "confidential",
            "secrets": [SECRET],
            "redirect_uris": [WEB_REDIRECT],
            "post_logout_redirect_uris": [WEB_LOGOUT, WEB_LOGOUT_WITH_QUERY],
            "backchannel_logout_uri": receiver.uri("webapp"),
        },
        "admin": {
            "name": "Admin",
            "type": "confidential",
            "secrets": [SECRET],
            "redirect_uris": ["https://admin.example.com/cb"],
            "post_logout_redirect_uris": [ADMIN_LOGOUT],
            "backchannel_logout_uri": receiver.uri("admin"),
        },
        "mobile": {
            "name": "Mobile",
            "type": "public",
            "redirect_uris": ["com.example.mobile:/cb"],
            "post_logout_redirect_uris": [MOBILE_LOGOUT],
        },
    }


def op_config(fake: FakeIdP, receiver: Receiver, database_url: str) -> dict[str, Any]:
    providers = {p: fake.config(p) for p in ("google", "apple")}
    providers["google"] |= {"backchannel_logout": True, "notifications": True}
    providers["apple"] |= {"notifications": True}
    return {
        "rest": {"public_url": ISSUER},
        "app": {
            "url": APP_URL,
            "callback_urls": [CALLBACK_URL.format(name=p) for p in providers],
        },
        "providers": providers,
        "database": {"url": database_url},
        "clients": clients_config(receiver),
        # Tests sign in many times from one address.
        "ratelimit": {"callback": "1000/minute", "initiation": "1000/minute"},
        "logout_tokens": {
            "retry_initial_seconds": RETRY_INITIAL,
            "retry_max_seconds": RETRY_MAX,
            "give_up_after_seconds": GIVE_UP_AFTER,
            "poll_seconds": 0.05,
            "lease_seconds": 5,
            "timeout_seconds": 2,
        },
    }


@attrs.define
class Session:
    """A browser's authgate session: its token (the cookie), account and session id."""

    token: str
    account_id: str
    session_id: str

    @property
    def cookie(self) -> dict[str, str]:
        return {"Cookie": f"session={self.token}"}

    @property
    def bearer(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@attrs.define
class Provider:
    """The service as an OpenID Provider on one store, with a driver for sign-ins."""

    signin: SignIn
    receiver: Receiver
    database_url: str
    store: str

    @property
    def client(self) -> Client:
        return self.signin.client

    @property
    def resources(self) -> Resources:
        return self.client.app[RESOURCES]

    @property
    def clock(self) -> SettableClock:
        return self.signin.clock

    async def signed_in(
        self, sub: str = "ada-1", provider: str = "google", intent: str = "register"
    ) -> Session:
        answer = await self.signin.complete(provider, user=FakeUser(sub=sub), intent=intent)
        assert answer.status == 302, answer.headers
        token = answer.cookies["session"].value
        claims = claims_of(token)
        return Session(token, str(claims["sub"]), str(claims["sid"]))

    def id_token(self, session: Session, client_id: str = "webapp", **claims: Any) -> str:
        """An ID token for ``client_id`` in ``session``, signed as the token endpoint signs."""
        assert self.resources.openid is not None
        now = int(self.clock.now().timestamp())
        base: dict[str, Any] = {
            "sub": session.account_id,
            "aud": client_id,
            "iat": now,
            "exp": now + 300,
            "auth_time": now,
            "sid": session.session_id,
            "nonce": "n-1",
        }
        return self.resources.openid.signer.id_token({**base, **claims})

    async def served(self, session: Session, *client_ids: str) -> None:
        """The clients received tokens in the session (what the token endpoint records)."""
        now = self.clock.now()
        async with self.resources.stores.units.begin() as tx:
            for client_id in client_ids:
                await tx.session_clients.add(
                    SessionClient(
                        session_id=session.session_id,
                        client_id=client_id,
                        account_id=session.account_id,
                        first_at=now,
                        expires_at=now + dt.timedelta(days=30),
                    )
                )

    async def family(self, session: Session, client_id: str = "webapp") -> str:
        """A token family with a refresh token, issued to ``client_id`` in the session."""
        now = self.clock.now()
        family_id = uuid.uuid4().hex
        expires = now + dt.timedelta(days=30)
        async with self.resources.stores.units.begin() as tx:
            await tx.refresh_tokens.start_family(
                TokenFamily(
                    family_id, client_id, session.account_id, session.session_id, now, expires
                ),
                RefreshToken(
                    token_hash=token_digest(uuid.uuid4().hex),
                    family_id=family_id,
                    client_id=client_id,
                    account_id=session.account_id,
                    session_id=session.session_id,
                    scopes=("openid", "offline_access"),
                    auth_time=now,
                    created_at=now,
                    expires_at=expires,
                ),
            )
        return family_id

    async def family_live(self, family_id: str) -> bool:
        async with self.resources.stores.units.begin() as tx:
            return await tx.refresh_tokens.is_family_live(family_id, self.clock.now())

    async def status(self, session: Session) -> int:
        """What the session's token gets from GET /v1/account (200 live, 401 ended)."""
        return (await self.client.get("/v1/account", headers=session.bearer)).status

    async def prompt_none(self, session: Session) -> str:
        """The OIDF logout modules' closing request: ``prompt=none`` for ``webapp`` from the
        browser; the ``error`` it is redirected back with (the state unchanged, no code)."""
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        state = secrets.token_urlsafe(96)
        answer = await self.client.get(
            "/oauth2/authorize",
            params={
                "response_type": "code",
                "client_id": "webapp",
                "redirect_uri": WEB_REDIRECT,
                "scope": "openid",
                "state": state,
                "prompt": "none",
                "code_challenge": base64.urlsafe_b64encode(digest).rstrip(b"=").decode(),
                "code_challenge_method": "S256",
            },
            headers=session.cookie,
            allow_redirects=False,
        )
        assert answer.status == 302, await answer.text()
        location = answer.headers["Location"]
        assert location.startswith(WEB_REDIRECT + "?"), location
        params = dict(parse_qsl(urlsplit(location).query))
        assert params["state"] == state and "code" not in params
        return params["error"]

    async def outbox(self) -> list[Any]:
        async with self.resources.stores.units.begin() as tx:
            return await tx.logout_outbox.pending()

    async def audit(self) -> list[Any]:
        return await self.resources.stores.events.recent(1000)


async def open_provider(
    make: MakeService,
    fake: FakeIdP,
    clock: SettableClock,
    receiver: Receiver,
    database_url: str,
    store: str,
    extra: dict[str, Any] | None = None,
) -> Provider:
    client = await make(merge(op_config(fake, receiver, database_url), extra or {}), clock=clock)
    receiver.service = client
    return Provider(SignIn(client, fake, clock), receiver, database_url, store)


@pytest.fixture(params=STORES)
async def op(
    request: pytest.FixtureRequest,
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
    receiver: Receiver,
    tmp_path: Path,
) -> AsyncIterator[Provider]:
    """:class:`Provider` on memory, SQLite and PostgreSQL."""
    url = service_database_url(request, request.param, tmp_path)
    yield await open_provider(make_service, fake_idp, idp_clock, receiver, url, request.param)


@pytest.fixture
async def op_memory(
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
    receiver: Receiver,
) -> Provider:
    """:class:`Provider` on memory, for what does not depend on the store."""
    return await open_provider(make_service, fake_idp, idp_clock, receiver, "memory://", "memory")
