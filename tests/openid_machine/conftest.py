"""The provider with machine clients (``client_credentials``) and clients registered for
resource servers (RFC 8707), on memory, SQLite and PostgreSQL: the OpenID Provider harness of
``tests/openid`` (:class:`~tests.openid.harness.Op`) with more clients, and the requests a
machine client makes."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse
from joserfc.jwk import ECKey

from tests.app.conftest import MakeService, make_service  # noqa: F401
from tests.fakeidp import FakeIdP, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
from tests.openid.conftest import op_config
from tests.openid.harness import CLIENTS, ISSUER, SECRET, Op
from tests.support.stores import service_database_url

STORES = ("memory", "sqlite", "postgres")
ROBOT_SECRET = "robot-secret-of-more-than-thirty-two-characters"
POSTER_SECRET = "poster-secret-of-more-than-thirty-two-characters"
RS_SECRET = "resource-server-secret-of-more-than-thirty-two"
MCP = "https://mcp.example.com/"
SSF = "https://ssf.example.com/events"
OTHER_API = "https://other.example.com/api"
SIGNER_KEY = ECKey.generate_key("P-256", parameters={"kid": "signer-1"})
RESOURCE_REDIRECT = "https://tools.example.com/cb"
PARTNER_REDIRECT = "https://partner.example.com/cb"

MACHINE_CLIENTS: dict[str, Any] = {
    **CLIENTS,
    # a machine: its own tokens only, client_secret_basic
    "robot": {
        "name": "Robot",
        "type": "confidential",
        "secrets": [ROBOT_SECRET],
        "grant_types": ["client_credentials"],
        "allowed_scopes": ["mcp:tools", "ssf.manage"],
        "resources": [MCP, SSF],
    },
    # a machine authenticating with client_secret_post, no API scope allowed
    "poster": {
        "name": "Poster",
        "type": "confidential",
        "token_endpoint_auth_method": "client_secret_post",
        "secrets": [POSTER_SECRET],
        "grant_types": ["client_credentials"],
    },
    # a machine authenticating with private_key_jwt
    "signer": {
        "name": "Signer",
        "type": "confidential",
        "token_endpoint_auth_method": "private_key_jwt",
        "jwks": {"keys": [SIGNER_KEY.as_dict(private=False)]},
        "grant_types": ["client_credentials"],
        "allowed_scopes": ["mcp:tools"],
        "resources": [MCP],
    },
    # a person's application whose tokens may be for resource servers (the code flow)
    "tools": {
        "name": "Tools",
        "type": "confidential",
        "secrets": [SECRET],
        "redirect_uris": [RESOURCE_REDIRECT],
        "first_party": True,
        "grant_types": ["authorization_code", "refresh_token", "client_credentials"],
        "allowed_scopes": ["openid", "profile", "email", "offline_access", "mcp:tools"],
        "resources": [MCP, SSF, OTHER_API],
    },
    # another party's application for a resource server: the person consents
    "partner": {
        "name": "Partner",
        "type": "confidential",
        "secrets": [SECRET],
        "redirect_uris": [PARTNER_REDIRECT],
        "resources": [MCP],
    },
    # a resource server that introspects the tokens it is sent
    "rs": {
        "name": "Resource server",
        "type": "confidential",
        "secrets": [RS_SECRET],
        "grant_types": ["client_credentials"],
        "introspection": True,
    },
}
SECRETS = {
    "robot": ROBOT_SECRET,
    "poster": POSTER_SECRET,
    "tools": SECRET,
    "partner": SECRET,
    "web": SECRET,
    "rs": RS_SECRET,
}


def basic(client_id: str) -> dict[str, str]:
    raw = base64.b64encode(f"{client_id}:{SECRETS[client_id]}".encode()).decode()
    return {"Authorization": f"Basic {raw}"}


def machine_config(fake: FakeIdP, url: str = "memory://", **extra: Any) -> dict[str, Any]:
    return op_config(fake, url, **{"clients": MACHINE_CLIENTS, **extra})


async def token_request(
    op: Op,
    client_id: str,
    fields: list[tuple[str, str]],
    *,
    post: bool = False,
) -> ClientResponse:
    """``POST /oauth2/token`` with ``fields`` (repeated ones repeated), as ``client_id``
    authenticates: Basic, or its secret in the form when ``post``."""
    if post:
        fields = [*fields, ("client_id", client_id), ("client_secret", SECRETS[client_id])]
        return await op.client.post("/oauth2/token", data=fields)
    return await op.client.post("/oauth2/token", data=fields, headers=basic(client_id))


async def client_token(
    op: Op, client_id: str = "robot", *, scope: str | None = None, resources: tuple[str, ...] = ()
) -> ClientResponse:
    fields = [("grant_type", "client_credentials")]
    if scope is not None:
        fields.append(("scope", scope))
    fields += [("resource", r) for r in resources]
    return await token_request(op, client_id, fields, post=client_id == "poster")


async def issued(response: ClientResponse) -> dict[str, Any]:
    assert response.status == 200, await response.text()
    assert response.headers["Cache-Control"] == "no-store"
    body: dict[str, Any] = await response.json()
    return body


async def refused(response: ClientResponse, error: str, status: int = 400) -> dict[str, Any]:
    assert response.status == status, await response.text()
    body: dict[str, Any] = await response.json()
    assert body["error"] == error, body
    return body


async def introspect(op: Op, token: str) -> dict[str, Any]:
    answer = await op.client.post("/oauth2/introspect", data={"token": token}, headers=basic("rs"))
    assert answer.status == 200, await answer.text()
    body: dict[str, Any] = await answer.json()
    return body


@pytest.fixture(params=STORES)
async def machine(
    request: pytest.FixtureRequest,
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
    tmp_path: Path,
) -> Op:
    """The provider with :data:`MACHINE_CLIENTS` on memory, SQLite and PostgreSQL."""
    url = service_database_url(request, request.param, tmp_path)
    client = await make_service(machine_config(fake_idp, url), clock=idp_clock)
    return Op(client, fake_idp, idp_clock)


@pytest.fixture
async def memory_machine(
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
) -> Op:
    """The provider with :data:`MACHINE_CLIENTS` on memory (for what no store decides)."""
    client = await make_service(machine_config(fake_idp), clock=idp_clock)
    return Op(client, fake_idp, idp_clock)


__all__ = ["ISSUER"]
