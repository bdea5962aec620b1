"""The OpenID Provider's errors as the service answers them over HTTP (RFC 6749 section 5.2):
client authentication driven through a form endpoint on the service's own exception handler.

``invalid_client`` is 401, with ``WWW-Authenticate: Basic`` when the client tried Basic;
``invalid_request`` is 400; keys that cannot be fetched are 503 with ``Retry-After``; none of
them is cached, and none says which part of the credentials was wrong.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
import pytest

from authgate.adapters.openid import RegisteredClientKeys
from authgate.domain.openid.clients import Client, ClientRegistry, SecretDigest
from authgate.entrypoints.http.common.errors import answer_error
from authgate.entrypoints.rest import Api, Call, Reply
from authgate.services.openid.client_authentication import JWT_BEARER, ClientAuthentication
from authgate.services.openid.client_directory import ClientDirectory
from tests.services.fakes import FixedClock
from tests.support.stores import MemoryStore

SECRET = "a-client-secret-of-forty-characters-long"
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
async def client(aiohttp_client: Any) -> Any:
    registry = ClientRegistry(
        [
            Client(
                client_id="web",
                name="Web",
                client_type="confidential",
                token_endpoint_auth_method="client_secret_basic",
                redirect_uris=("https://app.example.com/cb",),
                secrets=(SecretDigest.of(SECRET),),
            ),
            Client(
                client_id="api",
                name="API",
                client_type="confidential",
                token_endpoint_auth_method="private_key_jwt",
                redirect_uris=("https://api.example.com/cb",),
                jwks_uri="http://127.0.0.1:1/jwks",  # nothing answers there
            ),
        ]
    )
    units = MemoryStore().units
    clock = FixedClock(dt.datetime.now(dt.UTC))
    session = aiohttp.ClientSession()
    auth = ClientAuthentication(
        ClientDirectory(registry),
        RegisteredClientKeys(session, clock, timeout_seconds=2),
        units,
        clock,
        issuer="https://auth.example.com",
    )
    api = Api("t", "1")
    api.on_exception(answer_error)

    async def probe(call: Call[bytes]) -> Reply[None]:
        form = dict(parse_qsl(call.body.decode(), keep_blank_values=True))
        authenticated = await auth.authenticate(call.request.headers.get("Authorization"), form)
        return Reply(None, headers={"X-Client": authenticated.client_id})

    api.operation("POST", "/probe", raw_body={FORM: None}, status=204)(probe)
    test_client = await aiohttp_client(api.app())
    yield test_client
    await session.close()


def basic(client_id: str, secret: str) -> dict[str, str]:
    raw = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    return {"Authorization": f"Basic {raw}", "Content-Type": FORM}


async def test_an_authenticated_client_passes(client: Any) -> None:
    answer = await client.post("/probe", data="grant_type=x", headers=basic("web", SECRET))
    assert answer.status == 204 and answer.headers["X-Client"] == "web"


async def test_a_wrong_basic_secret_is_401_with_the_basic_challenge(client: Any) -> None:
    answer = await client.post("/probe", data="grant_type=x", headers=basic("web", "nope"))
    assert answer.status == 401
    assert answer.headers["WWW-Authenticate"] == 'Basic realm="authgate", charset="UTF-8"'
    assert answer.headers["Cache-Control"] == "no-store"
    assert await answer.json() == {
        "error": "invalid_client",
        "error_description": "client authentication failed",
    }


async def test_a_wrong_posted_secret_is_401_without_a_challenge(client: Any) -> None:
    body = f"grant_type=x&client_id=web&client_secret={SECRET}"
    answer = await client.post("/probe", data=body, headers={"Content-Type": FORM})
    assert answer.status == 401  # the client registered Basic
    assert "WWW-Authenticate" not in answer.headers
    assert (await answer.json())["error"] == "invalid_client"


async def test_two_methods_at_once_is_400_invalid_request(client: Any) -> None:
    answer = await client.post(
        "/probe", data=f"client_secret={SECRET}", headers=basic("web", SECRET)
    )
    assert answer.status == 400
    assert (await answer.json())["error"] == "invalid_request"
    assert answer.headers["Cache-Control"] == "no-store"


async def test_keys_out_of_reach_are_503_to_retry(client: Any) -> None:
    payload = base64.urlsafe_b64encode(b'{"iss":"api","sub":"api"}').rstrip(b"=").decode()
    token = f"eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.{payload}.c2ln"
    body = f"client_assertion_type={JWT_BEARER}&client_assertion={token}"
    answer = await client.post("/probe", data=body, headers={"Content-Type": FORM})
    assert answer.status == 503
    assert answer.headers["Retry-After"] == "5"
    assert (await answer.json())["error"] == "temporarily_unavailable"


def test_the_handler_leaves_other_exceptions_alone() -> None:
    request: Any = None  # not looked at for these
    assert answer_error(request, RuntimeError("a bug")) is None
