"""Scopes on every security scheme (an API key in a header or a cookie, as a session cookie is
declared), and optional security: no credential runs anonymously, a bad one is still 401."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from openapi_spec_validator import validate

from authgate.entrypoints.rest import Api, ApiKey, BearerJWT, Call, InvalidCredential, Principal

from .conftest import Serve
from .test_security import FakeVerifier

Client = TestClient[web.Request, web.Application]


class ScopedKeys:
    """An ApiKeyChecker: ``key-<sub>[-<scope>+<scope>]`` verifies, anything else fails."""

    async def check(self, key: str) -> Principal:
        if not key.startswith("key-"):
            raise InvalidCredential("unknown key")
        sub, _, scope = key.removeprefix("key-").partition("-")
        return Principal(sub, "cookie", {"sub": sub, "scope": scope.replace("+", " ")})


@attrs.frozen
class Caller:
    subject: str | None
    scheme: str | None


def caller(call: Call[None]) -> Caller:
    p = call.principal
    return Caller(p.subject if p else None, p.scheme if p else None)


BEARER = BearerJWT("bearerAuth", FakeVerifier())
HEADER_KEY = ApiKey("apiKey", "X-API-Key", ScopedKeys())
SESSION = ApiKey("sessionCookie", "session", ScopedKeys(), in_cookie=True)
MANAGE = "account:manage"


def scoped_api() -> Api:
    api = Api("Example", "1.0.0")

    @api.operation(
        "GET", "/by-key", security=[HEADER_KEY.with_scopes("account:read", MANAGE)], response=Caller
    )
    async def by_key(call: Call[None]) -> Caller:
        return caller(call)

    @api.operation("GET", "/by-cookie", security=[SESSION.with_scopes(MANAGE)], response=Caller)
    async def by_cookie(call: Call[None]) -> Caller:
        return caller(call)

    @api.operation(
        "GET",
        "/link",
        security=[BEARER.with_scopes(MANAGE), SESSION.with_scopes(MANAGE)],
        security_optional=True,
        response=Caller,
    )
    async def link(call: Call[None]) -> Caller:
        return caller(call)

    return api


@pytest.fixture
async def client(serve: Serve) -> Client:
    return await serve(scoped_api())


async def test_an_api_key_without_the_scope_is_403_insufficient_scope(client: Client) -> None:
    resp = await client.get("/by-key", headers={"X-API-Key": "key-eve-profile"})
    assert resp.status == 403
    # An API key has no HTTP challenge to name.
    assert "WWW-Authenticate" not in resp.headers
    assert await resp.json() == {
        "error": "insufficient_scope",
        "message": "the token lacks the required scope: one of account:manage, account:read",
    }


async def test_an_api_key_with_one_of_the_scopes_passes(client: Client) -> None:
    for key in ("key-ada-account:read", "key-bob-openid+account:manage"):
        resp = await client.get("/by-key", headers={"X-API-Key": key})
        assert resp.status == 200, key
    assert await resp.json() == {"subject": "bob", "scheme": "cookie"}


async def test_a_cookie_scheme_checks_its_scopes(client: Client) -> None:
    resp = await client.get("/by-cookie", headers={"Cookie": "session=key-eve-account:read"})
    assert resp.status == 403
    assert await resp.json() == {
        "error": "insufficient_scope",
        "message": "the token lacks the required scope: one of account:manage",
    }
    resp = await client.get("/by-cookie", headers={"Cookie": "session=key-ada-account:manage"})
    assert resp.status == 200
    assert await resp.json() == {"subject": "ada", "scheme": "cookie"}
    resp = await client.get("/by-cookie")
    assert resp.status == 401  # not optional: a missing cookie is refused
    assert await resp.json() == {
        "error": "unauthorized",
        "message": "sign in first: no session cookie",
    }


async def test_optional_security_without_a_credential_runs_anonymously(client: Client) -> None:
    resp = await client.get("/link", headers={"Cookie": "theme=dark"})
    assert resp.status == 200
    assert await resp.json() == {"subject": None, "scheme": None}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Authorization": "Bearer forged"}, 401),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, 401),
        ({"Cookie": "session=forged"}, 401),
        ({"Authorization": "Bearer good-eve-account:read"}, 403),
        ({"Cookie": "session=key-eve-account:read"}, 403),
    ],
)
async def test_optional_security_still_refuses_a_bad_credential(
    client: Client, headers: dict[str, str], status: int
) -> None:
    resp = await client.get("/link", headers=headers)
    assert resp.status == status
    body: dict[str, Any] = await resp.json()
    assert body["error"] == ("unauthorized" if status == 401 else "insufficient_scope")


async def test_optional_security_with_a_good_credential_passes_the_principal(
    client: Client,
) -> None:
    resp = await client.get("/link", headers={"Authorization": "Bearer good-ada-account:manage"})
    assert await resp.json() == {"subject": "ada", "scheme": "bearer"}
    resp = await client.get("/link", headers={"Cookie": "session=key-bob-account:manage"})
    assert await resp.json() == {"subject": "bob", "scheme": "cookie"}
    # Both sent: the first listed scheme's credential is the one used.
    resp = await client.get(
        "/link",
        headers={
            "Authorization": "Bearer good-ada-account:manage",
            "Cookie": "session=key-bob-account:manage",
        },
    )
    assert await resp.json() == {"subject": "ada", "scheme": "bearer"}


def test_the_document_says_anonymous_is_allowed_after_the_schemes() -> None:
    doc = scoped_api().openapi()
    validate(doc)
    paths = doc["paths"]
    assert paths["/link"]["get"]["security"] == [{"bearerAuth": []}, {"sessionCookie": []}, {}]
    # A credential that is sent may still be refused.
    assert {"401", "403"} <= set(paths["/link"]["get"]["responses"])
    # Required security keeps its document: no empty requirement.
    assert paths["/by-cookie"]["get"]["security"] == [{"sessionCookie": []}]
    assert "403" in paths["/by-key"]["get"]["responses"]


def test_optional_security_needs_a_scheme() -> None:
    api = Api("Example", "1.0.0")
    with pytest.raises(ValueError, match="optional security needs at least one scheme"):

        @api.operation("GET", "/nothing", security_optional=True)
        async def nothing(call: Call[None]) -> None:
            return None
