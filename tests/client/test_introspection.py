"""``authgate.client``'s optional introspection check against a real ``authgate serve`` with a
back end registered for introspection: a revoked session is refused once the short cache of
"active" lets go (a verifier without the check keeps accepting it until ``exp``), answers are
cached and shared, and authgate's refusal of the credentials is a 503, or a pass with
``fail_open``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from authgate.client import (
    Introspection,
    IntrospectionUnavailable,
    InvalidSession,
    SessionVerifier,
)
from authgate.client.aiohttp import session_middleware
from tests.client.support import AUDIENCE, ISSUER, Authgate

SECRET = "back-end-secret-" + "b" * 32
CLIENTS = {
    "clients": {
        "backend": {
            "name": "Back end",
            "type": "confidential",
            "secrets": [SECRET],
            "redirect_uris": ["https://backend.example.test/cb"],
            "introspection": True,
        },
        "frontend": {
            "name": "Front end",
            "type": "confidential",
            "secrets": [SECRET],
            "redirect_uris": ["https://frontend.example.test/cb"],
        },
    }
}
CACHE_SECONDS = 1.5


@pytest.fixture(scope="module")
def authgate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Authgate]:
    service = Authgate(tmp_path_factory.mktemp("authgate"), CLIENTS)
    service.start()
    try:
        yield service
    finally:
        service.stop()


def checked_verifier(authgate: Authgate, **options: object) -> SessionVerifier:
    settings: dict[str, object] = {
        "client_id": "backend",
        "client_secret": SECRET,
        "cache_seconds": CACHE_SECONDS,
        **options,
    }
    introspection = Introspection.for_service(authgate.base, **settings)
    return SessionVerifier.for_service(
        authgate.base, issuer=ISSUER, audience=AUDIENCE, introspection=introspection
    )


async def sign_out(authgate: Authgate, token: str) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{authgate.base}/v1/auth/logout", headers={"Authorization": f"Bearer {token}"}
        ) as answer,
    ):
        assert answer.status == 204


async def test_a_revoked_session_is_refused_once_the_cache_lets_go(authgate: Authgate) -> None:
    token = await authgate.sign_in("ada")
    async with (
        checked_verifier(authgate) as checked,
        SessionVerifier.for_service(authgate.base, issuer=ISSUER, audience=AUDIENCE) as plain,
    ):
        introspection = checked.introspection
        assert introspection is not None
        session = await checked.verify(token)
        assert session.scopes == {"account:read", "account:manage"}
        assert introspection.requests == 1
        await checked.verify(token)  # cached
        assert introspection.requests == 1

        await sign_out(authgate, token)
        await asyncio.sleep(CACHE_SECONDS + 0.1)
        with pytest.raises(InvalidSession, match="no longer active"):
            await checked.verify(token)
        assert introspection.requests == 2
        # Not active is kept until the token would have expired: no further requests.
        with pytest.raises(InvalidSession):
            await checked.verify(token)
        assert introspection.requests == 2
        # Without the check, the revoked session's token still verifies (until exp).
        assert (await plain.verify(token)).account_id == session.account_id


async def test_concurrent_checks_share_one_request_and_the_cache_is_bounded(
    authgate: Authgate,
) -> None:
    first = await authgate.sign_in("grace")
    second = await authgate.sign_in("alan")
    async with checked_verifier(authgate, max_entries=1) as verifier:
        introspection = verifier.introspection
        assert introspection is not None
        await asyncio.gather(*(verifier.verify(first) for _ in range(10)))
        assert introspection.requests == 1
        await verifier.verify(second)  # pushes the first answer out
        assert introspection.requests == 2
        await verifier.verify(first)
        assert introspection.requests == 3


async def test_a_client_not_allowed_to_introspect_makes_the_check_unavailable(
    authgate: Authgate,
) -> None:
    token = await authgate.sign_in("ada")
    async with checked_verifier(authgate, client_id="frontend") as verifier:
        with pytest.raises(IntrospectionUnavailable, match="HTTP 403"):
            await verifier.verify(token)
    async with checked_verifier(authgate, client_secret="wrong" * 8) as verifier:
        with pytest.raises(IntrospectionUnavailable, match="HTTP 401"):
            await verifier.verify(token)
    async with checked_verifier(authgate, client_id="frontend", fail_open=True) as verifier:
        assert (await verifier.verify(token)).account_id


@pytest.fixture
async def protected(authgate: Authgate) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    """An application behind the aiohttp middleware, its check misconfigured."""
    verifier = checked_verifier(authgate, client_id="frontend")

    async def hello(_: web.Request) -> web.Response:
        return web.json_response({"hello": True})

    app = web.Application(middlewares=[session_middleware(verifier)])
    app.router.add_get("/hello", hello)
    async with TestClient(TestServer(app)) as client:
        yield client
    await verifier.close()


async def test_the_middleware_answers_503_when_authgate_cannot_say(
    authgate: Authgate, protected: TestClient[web.Request, web.Application]
) -> None:
    token = await authgate.sign_in("ada")
    answer = await protected.get("/hello", headers={"Authorization": f"Bearer {token}"})
    assert answer.status == 503
    assert (await answer.json())["error"] == "temporarily_unavailable"
