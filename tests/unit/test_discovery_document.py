"""The OpenID Provider's discovery document, checked as the OpenID Foundation's
``oidcc-discovery-endpoint-verification`` checks it (and the logout plans' discovery modules),
and as RFC 8414 asks: what it lists is what the provider does, and nothing it does not."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from authgate.entrypoints.app.config import openid_issuer, parse
from authgate.entrypoints.http.openid.discovery import (
    DISCOVERY_PATH,
    DiscoveryOperations,
    openid_configuration,
    provider_metadata,
)
from authgate.entrypoints.rest import Api

PUBLIC_URL = "https://auth.example.com"
SUFFIX = "/.well-known/openid-configuration"


def configuration(public_url: str | None = PUBLIC_URL, environment: str = "production") -> Any:
    rest: dict[str, Any] = {"port": 8080}
    if public_url is not None:
        rest["public_url"] = public_url
    return parse(
        yaml.safe_dump(
            {
                "rest": rest,
                "otel": {"service": {"name": "t"}, "sdk": {"disabled": True}},
                "environment": environment,
            }
        )
    )


@pytest.fixture
def document() -> dict[str, Any]:
    return openid_configuration(openid_issuer(configuration()))


def is_https_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme == "https" and bool(parts.hostname) and not parts.fragment


# -- oidcc-discovery-endpoint-verification, one check at a time -----------------------------


def test_the_issuer_is_the_discovery_url_without_its_suffix(document: dict[str, Any]) -> None:
    discovery_url = document["issuer"] + DISCOVERY_PATH
    assert DISCOVERY_PATH == SUFFIX
    assert is_https_url(discovery_url) and discovery_url.endswith(SUFFIX)
    assert discovery_url.removesuffix(SUFFIX) == document["issuer"] == PUBLIC_URL
    assert is_https_url(document["issuer"])
    assert not urlsplit(document["issuer"]).query


def test_response_types_include_an_openid_one_and_only_code(document: dict[str, Any]) -> None:
    # No implicit or hybrid flow: the code flow alone.
    assert document["response_types_supported"] == ["code"]
    assert document["response_modes_supported"] == ["query", "form_post"]


def test_subject_types(document: dict[str, Any]) -> None:
    assert document["subject_types_supported"] == ["public"]


def test_id_tokens_are_rs256_and_never_unsigned(document: dict[str, Any]) -> None:
    algorithms = document["id_token_signing_alg_values_supported"]
    assert "RS256" in algorithms and "none" not in algorithms
    assert algorithms == ["RS256", "ES256"]
    assert "userinfo_signing_alg_values_supported" not in document  # userinfo is plain JSON


def test_the_endpoints_are_https_urls_under_the_issuer(document: dict[str, Any]) -> None:
    endpoints = {k: v for k, v in document.items() if k.endswith("_endpoint")}
    assert set(endpoints) == {
        "authorization_endpoint",
        "token_endpoint",
        "userinfo_endpoint",
        "revocation_endpoint",
        "introspection_endpoint",
        "end_session_endpoint",
        "device_authorization_endpoint",
    }
    for name, url in [*endpoints.items(), ("jwks_uri", document["jwks_uri"])]:
        assert is_https_url(url), name
        assert url.startswith(PUBLIC_URL + "/"), name
    assert document["authorization_endpoint"] == f"{PUBLIC_URL}/oauth2/authorize"
    assert document["token_endpoint"] == f"{PUBLIC_URL}/oauth2/token"
    assert document["userinfo_endpoint"] == f"{PUBLIC_URL}/oauth2/userinfo"
    assert document["revocation_endpoint"] == f"{PUBLIC_URL}/oauth2/revoke"
    assert document["introspection_endpoint"] == f"{PUBLIC_URL}/oauth2/introspect"
    assert document["end_session_endpoint"] == f"{PUBLIC_URL}/oauth2/logout"
    # The key set the service already publishes, not a second one.
    assert document["jwks_uri"] == f"{PUBLIC_URL}/.well-known/jwks.json"
    assert "registration_endpoint" not in document  # clients are configuration


def test_claims_supported_is_an_array_of_what_tokens_carry(document: dict[str, Any]) -> None:
    claims = document["claims_supported"]
    assert isinstance(claims, list) and len(claims) == len(set(claims))
    assert {"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "sid"} <= set(claims)
    assert {"email", "email_verified", "name"} <= set(claims)
    # Nothing of the address or phone scopes, which the provider does not have.
    assert not {"address", "phone_number", "phone_number_verified"} & set(claims)


def test_grant_types_are_a_non_empty_array(document: dict[str, Any]) -> None:
    assert document["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:device_code",
    ]
    assert "implicit" not in document["grant_types_supported"]


def test_scopes_include_openid_and_are_valid_scope_tokens(document: dict[str, Any]) -> None:
    scopes = document["scopes_supported"]
    assert "openid" in scopes
    assert scopes == ["openid", "profile", "email", "offline_access"]
    for scope in scopes:  # RFC 6749 section 3.3
        assert re.fullmatch(r"[\x21\x23-\x5b\x5d-\x7e]+", scope), scope


def test_pkce_is_s256_only(document: dict[str, Any]) -> None:
    assert document["code_challenge_methods_supported"] == ["S256"]


def test_no_unknown_member_types(document: dict[str, Any]) -> None:
    for name, value in document.items():
        if name.endswith("_supported") and not isinstance(value, bool):
            assert isinstance(value, list) and value, name
            assert all(isinstance(v, str) and v for v in value), name


# -- client authentication (basic plan, RFC 8414) --------------------------------------------


def test_both_secret_methods_and_the_others_are_listed(document: dict[str, Any]) -> None:
    methods = document["token_endpoint_auth_methods_supported"]
    assert methods == ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"]
    # RFC 8414 section 2: with private_key_jwt, the algorithms; never none, never an HMAC.
    algorithms = document["token_endpoint_auth_signing_alg_values_supported"]
    assert algorithms == ["RS256", "PS256", "ES256", "EdDSA"]
    assert document["revocation_endpoint_auth_methods_supported"] == methods
    assert document["revocation_endpoint_auth_signing_alg_values_supported"] == algorithms
    # Introspection is for confidential clients: never without authentication.
    assert document["introspection_endpoint_auth_methods_supported"] == methods[:3]
    assert document["introspection_endpoint_auth_signing_alg_values_supported"] == algorithms


# -- what the provider says it does not do, and the logout plans -----------------------------


def test_request_objects_and_the_claims_parameter_are_declared_unsupported(
    document: dict[str, Any],
) -> None:
    assert document["request_parameter_supported"] is False
    assert document["request_uri_parameter_supported"] is False
    assert document["claims_parameter_supported"] is False
    assert "request_object_signing_alg_values_supported" not in document


def test_logout_and_the_authorization_response_issuer(document: dict[str, Any]) -> None:
    # oidcc-rp-initiated-logout-discovery-endpoint-verification
    assert is_https_url(document["end_session_endpoint"])
    # oidcc-backchannel-logout-discovery-endpoint-verification
    assert document["backchannel_logout_supported"] is True
    assert document["backchannel_logout_session_supported"] is True
    assert "frontchannel_logout_supported" not in document
    # RFC 9207
    assert document["authorization_response_iss_parameter_supported"] is True
    assert document["prompt_values_supported"] == ["none", "login", "consent"]


def test_the_document_is_json_and_a_function_of_the_configuration() -> None:
    document = openid_configuration(openid_issuer(configuration(PUBLIC_URL + "/")))
    assert json.loads(json.dumps(document)) == document
    assert document["issuer"] == PUBLIC_URL  # a trailing slash of the public URL dropped
    development = openid_configuration(openid_issuer(configuration(None, "development")))
    assert development["issuer"] == "http://127.0.0.1:8080"
    assert development["token_endpoint"] == "http://127.0.0.1:8080/oauth2/token"


async def test_the_operation_serves_the_document(aiohttp_client: Any) -> None:
    config = configuration()
    api = Api("t", "1")
    DiscoveryOperations(provider_metadata(openid_issuer(config))).register(api)
    client = await aiohttp_client(api.app())
    answer = await client.get(DISCOVERY_PATH)
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("application/json")
    assert answer.headers["Cache-Control"] == "public, max-age=300"
    assert await answer.json() == openid_configuration(openid_issuer(config))
    document = api.openapi()
    assert DISCOVERY_PATH in document["paths"]
