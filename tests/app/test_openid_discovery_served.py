"""The provider face as a running service serves it: discovery at the issuer's well-known
address, every key of the one key set published with its kid, an RSA key made on first start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.app.conftest import MakeService

ISSUER = "https://auth.example.com"
CLIENTS: dict[str, Any] = {
    "web": {
        "name": "Web",
        "type": "confidential",
        "secrets": ["s" * 40],
        "redirect_uris": ["https://web.example.com/cb"],
    }
}


async def test_discovery_is_served_with_the_issuer_and_the_one_key_set(
    make_service: MakeService, tmp_path: Path
) -> None:
    client = await make_service({"rest": {"public_url": ISSUER}, "clients": CLIENTS})
    response = await client.get("/.well-known/openid-configuration")
    assert response.status == 200
    assert response.content_type == "application/json"
    document = await response.json()
    assert document["issuer"] == ISSUER
    assert document["jwks_uri"] == ISSUER + "/.well-known/jwks.json"
    assert document["token_endpoint"] == ISSUER + "/oauth2/token"
    assert "RS256" in document["id_token_signing_alg_values_supported"]
    assert document["code_challenge_methods_supported"] == ["S256"]

    keys = (await (await client.get("/.well-known/jwks.json")).json())["keys"]
    kids = [k["kid"] for k in keys]
    assert all(kids) and len(set(kids)) == len(kids)
    assert {k["kty"] for k in keys} >= {"RSA", "EC"}
    assert not any("d" in k for k in keys)
    # Made on the first start, kept in the key file for the next.
    stored = json.loads((tmp_path / "keys.json").read_text())["keys"]
    assert any(k["kty"] == "RSA" for k in stored)


async def test_without_clients_there_is_no_provider_face(make_service: MakeService) -> None:
    client = await make_service()
    assert (await client.get("/.well-known/openid-configuration")).status == 404
    keys = (await (await client.get("/.well-known/jwks.json")).json())["keys"]
    assert {k["kty"] for k in keys} == {"EC"}


async def test_the_openapi_document_lists_discovery_when_clients_are_registered(
    make_service: MakeService,
) -> None:
    client = await make_service({"rest": {"public_url": ISSUER}, "clients": CLIENTS})
    paths = (await (await client.get("/openapi.json")).json())["paths"]
    assert "/.well-known/openid-configuration" in paths
