"""Security schemes: bearer JWT with a pluggable verifier, API key in a header or cookie."""

from __future__ import annotations

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints.rest import (
    Api,
    ApiKey,
    ApiKeyChecker,
    BearerJWT,
    Call,
    InvalidCredential,
    Principal,
    TokenVerifier,
    query,
    required,
)

from .conftest import Serve

Client = TestClient[web.Request, web.Application]


class FakeVerifier:
    """A TokenVerifier: ``good-<sub>[-<scope>]`` tokens verify, anything else fails."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def verify(self, token: str) -> Principal:
        self.seen.append(token)
        if not token.startswith("good-"):
            raise InvalidCredential(f"bad signature on {token}")
        sub, _, scope = token.removeprefix("good-").partition("-")
        return Principal(sub, "bearer", {"sub": sub, "scope": scope.replace("+", " ")})


class FakeKeys:
    """An ApiKeyChecker accepting one key."""

    async def check(self, key: str) -> Principal:
        if key != "k-123":
            raise InvalidCredential("unknown key")
        return Principal("service-a", "api_key", {})


@attrs.frozen
class Me:
    subject: str
    scheme: str
    scope: str


def secured_api(verifier: TokenVerifier, keys: ApiKeyChecker) -> tuple[Api, list[str]]:
    api = Api("Example", "1.0.0")
    runs: list[str] = []
    bearer = BearerJWT("bearerAuth", verifier)

    def me(call: Call[None]) -> Me:
        assert call.principal is not None
        runs.append(call.principal.subject)
        return Me(
            call.principal.subject,
            call.principal.scheme,
            str(call.principal.claims.get("scope", "")),
        )

    @api.operation("GET", "/me", security=[bearer], params=[query("q", required)], response=Me)
    async def get_me(call: Call[None]) -> Me:
        return me(call)

    @api.operation(
        "GET",
        "/accounts",
        security=[bearer.with_scopes("account:read", "account:manage")],
        response=Me,
    )
    async def accounts(call: Call[None]) -> Me:
        return me(call)

    @api.operation("GET", "/service", security=[ApiKey("apiKey", "X-API-Key", keys)], response=Me)
    async def service(call: Call[None]) -> Me:
        return me(call)

    @api.operation(
        "GET",
        "/cookie",
        security=[ApiKey("cookieKey", "api_key", keys, in_cookie=True)],
        response=Me,
    )
    async def by_cookie(call: Call[None]) -> Me:
        return me(call)

    return api, runs


@pytest.fixture
def verifier() -> FakeVerifier:
    return FakeVerifier()


async def runs_of(serve: Serve, verifier: FakeVerifier) -> tuple[Client, list[str]]:
    api, runs = secured_api(verifier, FakeKeys())
    return await serve(api), runs


async def test_missing_authorization_is_401_and_the_operation_does_not_run(
    serve: Serve, verifier: FakeVerifier
) -> None:
    client, runs = await runs_of(serve, verifier)
    resp = await client.get("/me?q=1")
    assert resp.status == 401
    assert resp.headers["WWW-Authenticate"] == "Bearer"
    assert await resp.json() == {
        "error": "unauthorized",
        "message": "sign in first: no bearer token",
    }
    assert runs == []
    assert verifier.seen == []


@pytest.mark.parametrize(
    "value", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "Bearer a b", "good-ada", "Token good-ada"]
)
async def test_malformed_authorization_is_401(
    serve: Serve, verifier: FakeVerifier, value: str
) -> None:
    client, runs = await runs_of(serve, verifier)
    resp = await client.get("/me?q=1", headers={"Authorization": value})
    assert resp.status == 401
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert await resp.json() == {
        "error": "unauthorized",
        "message": "malformed Authorization header",
    }
    assert runs == []
    assert verifier.seen == []


async def test_failing_token_is_401_and_the_reason_is_not_sent(
    serve: Serve, verifier: FakeVerifier
) -> None:
    client, runs = await runs_of(serve, verifier)
    resp = await client.get("/me?q=1", headers={"Authorization": "Bearer forged"})
    assert resp.status == 401
    assert resp.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    assert await resp.json() == {
        "error": "unauthorized",
        "message": "invalid or expired bearer token",
    }
    assert "bad signature" not in await resp.text()
    assert runs == []
    assert verifier.seen == ["forged"]


async def test_verified_token_passes_the_principal(serve: Serve, verifier: FakeVerifier) -> None:
    client, runs = await runs_of(serve, verifier)
    resp = await client.get("/me?q=1", headers={"Authorization": "bearer good-ada-read"})
    assert resp.status == 200
    assert await resp.json() == {"subject": "ada", "scheme": "bearer", "scope": "read"}
    assert runs == ["ada"]


async def test_security_is_checked_before_parameters(serve: Serve, verifier: FakeVerifier) -> None:
    client, runs = await runs_of(serve, verifier)
    assert (await client.get("/me")).status == 401
    resp = await client.get("/me", headers={"Authorization": "Bearer good-ada"})
    assert resp.status == 400
    assert await resp.json() == {"error": "missing required request parameter in query: q"}
    assert runs == []


async def test_scopes_any_of(serve: Serve, verifier: FakeVerifier) -> None:
    client, runs = await runs_of(serve, verifier)
    for token in ("good-ada-account:read", "good-bob-openid+account:manage"):
        resp = await client.get("/accounts", headers={"Authorization": f"Bearer {token}"})
        assert resp.status == 200, token
    assert runs == ["ada", "bob"]


async def test_missing_scope_is_403_insufficient_scope(
    serve: Serve, verifier: FakeVerifier
) -> None:
    client, runs = await runs_of(serve, verifier)
    resp = await client.get("/accounts", headers={"Authorization": "Bearer good-eve-profile"})
    assert resp.status == 403
    assert resp.headers["WWW-Authenticate"] == 'Bearer error="insufficient_scope"'
    assert await resp.json() == {
        "error": "insufficient_scope",
        "message": "the token lacks the required scope: one of account:manage, account:read",
    }
    assert runs == []


async def test_api_key_in_a_header(serve: Serve, verifier: FakeVerifier) -> None:
    client, runs = await runs_of(serve, verifier)
    resp = await client.get("/service")
    assert resp.status == 401
    assert await resp.json() == {
        "error": "unauthorized",
        "message": "sign in first: no X-API-Key header",
    }
    resp = await client.get("/service", headers={"X-API-Key": "wrong"})
    assert resp.status == 401
    assert await resp.json() == {"error": "unauthorized", "message": "invalid API key"}
    assert runs == []
    resp = await client.get("/service", headers={"x-api-key": "k-123"})
    assert resp.status == 200
    assert await resp.json() == {"subject": "service-a", "scheme": "api_key", "scope": ""}
    assert runs == ["service-a"]


async def test_api_key_in_a_cookie(serve: Serve, verifier: FakeVerifier) -> None:
    client, runs = await runs_of(serve, verifier)
    resp = await client.get("/cookie", headers={"X-API-Key": "k-123"})
    assert resp.status == 401
    assert await resp.json() == {
        "error": "unauthorized",
        "message": "sign in first: no api_key cookie",
    }
    resp = await client.get("/cookie", headers={"Cookie": "api_key=nope"})
    assert resp.status == 401
    assert runs == []
    resp = await client.get("/cookie", headers={"Cookie": "theme=dark; api_key=k-123"})
    assert resp.status == 200
    assert runs == ["service-a"]


async def test_first_present_scheme_of_several_is_used(serve: Serve) -> None:
    api = Api("Example", "1.0.0")
    verifier = FakeVerifier()

    @api.operation(
        "GET",
        "/either",
        security=[BearerJWT("bearerAuth", verifier), ApiKey("apiKey", "X-API-Key", FakeKeys())],
        response=Me,
    )
    async def either(call: Call[None]) -> Me:
        assert call.principal is not None
        return Me(call.principal.subject, call.principal.scheme, "")

    client = await serve(api)
    resp = await client.get("/either", headers={"X-API-Key": "k-123"})
    assert (await resp.json())["scheme"] == "api_key"
    resp = await client.get("/either", headers={"Authorization": "Bearer good-ada"})
    assert (await resp.json())["scheme"] == "bearer"
    resp = await client.get("/either")
    assert resp.status == 401
    assert resp.headers["WWW-Authenticate"] == "Bearer"
