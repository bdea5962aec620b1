"""Both endpoints of the code flow in the OpenAPI document, with their parameters, form
bodies, HTML answers and RFC 6749 errors; only when clients are registered."""

from __future__ import annotations

from typing import Any

from tests.app.conftest import MakeService

from .harness import CLIENTS, ISSUER


async def document(make_service: MakeService, **config: Any) -> dict[str, Any]:
    client = await make_service({"rest": {"public_url": ISSUER}, **config})
    answer = await (await client.get("/openapi.json")).json()
    assert isinstance(answer, dict)
    return answer


async def test_the_authorization_and_token_endpoints_are_documented(
    make_service: MakeService,
) -> None:
    doc = await document(make_service, clients=CLIENTS)
    authorize = doc["paths"]["/oauth2/authorize"]
    params = {p["name"]: p for p in authorize["get"]["parameters"]}
    for name in ("client_id", "redirect_uri", "response_type", "scope", "code_challenge"):
        assert params[name]["required"] is True and params[name]["in"] == "query"
    for name in (
        "state",
        "nonce",
        "prompt",
        "max_age",
        "login_hint",
        "id_token_hint",
        "response_mode",
        "provider",
        "request",
        "request_uri",
    ):
        assert params[name]["required"] is False
    responses = authorize["get"]["responses"]
    assert "302" in responses and "HTML" in responses["200"]["description"]
    assert "never a redirect" in responses["400"]["description"]
    form = authorize["post"]["requestBody"]["content"]["application/x-www-form-urlencoded"]
    assert {"client_id", "redirect_uri", "code_challenge", "prompt"} <= set(
        _properties(doc, form["schema"])
    )
    assert "303" in authorize["post"]["responses"]
    assert "/oauth2/consent" in doc["paths"]

    token = doc["paths"]["/oauth2/token"]["post"]
    body = token["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    assert {"grant_type", "code", "redirect_uri", "code_verifier", "refresh_token", "scope"} <= set(
        _properties(doc, body)
    )
    ok = _properties(doc, token["responses"]["200"]["content"]["application/json"]["schema"])
    assert {"access_token", "token_type", "expires_in", "id_token", "refresh_token"} <= set(ok)
    examples = token["responses"]["400"]["content"]["application/json"]["examples"]
    assert {"invalid_grant", "invalid_request", "unsupported_grant_type"} <= set(examples)
    assert "invalid_client" in token["responses"]["401"]["content"]["application/json"]["examples"]


async def test_without_clients_there_is_no_code_flow(make_service: MakeService) -> None:
    paths = (await document(make_service))["paths"]
    assert "/oauth2/authorize" not in paths and "/oauth2/token" not in paths


def _properties(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    properties = schema["properties"]
    assert isinstance(properties, dict)
    return properties
