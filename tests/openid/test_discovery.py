"""The discovery document as the OIDF config OP plan's one module checks it, and the
conditions under which the basic OP plan skips a module: what authgate does not advertise,
the suite does not try (or, for request objects, accepts a refusal)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from authgate.entrypoints.app.config import ConfigError
from tests.app.conftest import load_config

from .harness import CLIENTS, ISSUER, Op

DISCOVERY = "/.well-known/openid-configuration"
# The members OpenID Connect Discovery 1.0 section 3, RFC 8414, RP-Initiated Logout,
# Back-Channel Logout and RFC 9207 define: any other is an unknown member (a warning).
URL_MEMBERS = {
    "issuer",
    "authorization_endpoint",
    "token_endpoint",
    "userinfo_endpoint",
    "jwks_uri",
    "registration_endpoint",
    "revocation_endpoint",
    "introspection_endpoint",
    "end_session_endpoint",
    "device_authorization_endpoint",  # RFC 8628 section 4
    "service_documentation",
    "op_policy_uri",
    "op_tos_uri",
}
LIST_MEMBERS = {
    "scopes_supported",
    "response_types_supported",
    "response_modes_supported",
    "grant_types_supported",
    "acr_values_supported",
    "subject_types_supported",
    "id_token_signing_alg_values_supported",
    "id_token_encryption_alg_values_supported",
    "id_token_encryption_enc_values_supported",
    "userinfo_signing_alg_values_supported",
    "userinfo_encryption_alg_values_supported",
    "userinfo_encryption_enc_values_supported",
    "request_object_signing_alg_values_supported",
    "request_object_encryption_alg_values_supported",
    "request_object_encryption_enc_values_supported",
    "token_endpoint_auth_methods_supported",
    "token_endpoint_auth_signing_alg_values_supported",
    "revocation_endpoint_auth_methods_supported",
    "revocation_endpoint_auth_signing_alg_values_supported",
    "introspection_endpoint_auth_methods_supported",
    "introspection_endpoint_auth_signing_alg_values_supported",
    "display_values_supported",
    "claim_types_supported",
    "claims_supported",
    "claims_locales_supported",
    "ui_locales_supported",
    "code_challenge_methods_supported",
    "prompt_values_supported",
}
BOOLEAN_MEMBERS = {
    "claims_parameter_supported",
    "request_parameter_supported",
    "request_uri_parameter_supported",
    "require_request_uri_registration",
    "authorization_response_iss_parameter_supported",
    "backchannel_logout_supported",
    "backchannel_logout_session_supported",
    "frontchannel_logout_supported",
    "frontchannel_logout_session_supported",
}
OIDC_RESPONSE_TYPES = {
    "code",
    "id_token",
    "id_token token",
    "code id_token",
    "code token",
    "code id_token token",
}
# RFC 6749 section 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
# BCP 47, as the suite checks a locale: language, then subtags
LOCALE = re.compile(r"[a-zA-Z]{2,8}(-[a-zA-Z0-9]{1,8})*")


async def discovery(op: Op) -> dict[str, Any]:
    response = await op.client.get(DISCOVERY)
    assert response.status == 200
    assert response.content_type == "application/json"
    document = await response.json()
    assert isinstance(document, dict)
    return document


def https_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme == "https" and bool(parts.netloc) and not parts.fragment


async def test_oidcc_discovery_endpoint_verification(op: Op) -> None:
    # the discovery URL: https, under the issuer, at the well-known path
    url = ISSUER + DISCOVERY
    assert https_url(url) and url.endswith("/.well-known/openid-configuration")
    document = await discovery(op)

    # the issuer is the discovery URL without the well-known path, a valid URL
    assert document["issuer"] == url.removesuffix(DISCOVERY)
    issuer = urlsplit(document["issuer"])
    assert https_url(document["issuer"]) and not issuer.query

    # the schema: known members only (unknown ones warn), each of its type
    assert set(document) <= URL_MEMBERS | LIST_MEMBERS | BOOLEAN_MEMBERS
    for name, value in document.items():
        if name in URL_MEMBERS:
            assert https_url(value), name
        elif name in LIST_MEMBERS:
            assert isinstance(value, list) and value, name
            assert all(isinstance(v, str) and v for v in value), name
        else:
            assert isinstance(value, bool), name

    assert OIDC_RESPONSE_TYPES & set(document["response_types_supported"])
    assert {"public", "pairwise"} & set(document["subject_types_supported"])
    algorithms = document["id_token_signing_alg_values_supported"]
    assert "RS256" in algorithms
    assert "userinfo_signing_alg_values_supported" not in document
    for name in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"):
        assert https_url(document[name]), name
    assert "registration_endpoint" not in document  # static registration only

    # the key set: fetchable, public keys only, each with its own non-empty kid
    jwks_uri = document["jwks_uri"]
    assert jwks_uri.startswith(ISSUER + "/")
    response = await op.client.get(jwks_uri[len(ISSUER) :])
    assert response.status == 200
    keys = (await response.json())["keys"]
    assert keys
    private = {"d", "p", "q", "dp", "dq", "qi", "k"}
    assert not any(private & set(key) for key in keys)
    assert all(key["kty"] in {"RSA", "EC"} for key in keys)
    kids = [key.get("kid") for key in keys]
    assert all(kids) and len(set(kids)) == len(kids)
    await op.keys()  # and joserfc imports it as a key set

    # request objects are not supported; when listed, RS256 should be among the algorithms
    assert "request_object_signing_alg_values_supported" not in document
    assert isinstance(document["claims_supported"], list)
    assert document["grant_types_supported"]
    scopes = document["scopes_supported"]
    assert "openid" in scopes
    assert all(SCOPE_TOKEN.fullmatch(scope) for scope in scopes)
    for name in ("claims_locales_supported", "ui_locales_supported"):
        assert all(LOCALE.fullmatch(locale) for locale in document.get(name, []))
    for name, value in document.items():
        if name.endswith("_endpoint"):
            assert https_url(value), name
    assert isinstance(document["code_challenge_methods_supported"], list)
    # the fixed requirements: both secret methods, client_secret_post listed
    methods = document["token_endpoint_auth_methods_supported"]
    assert {"client_secret_basic", "client_secret_post"} <= set(methods)


async def test_oidcc_idtoken_unsigned(op: Op, tmp_path: Path) -> None:
    """Skipped by the suite: ``none`` is not an ID token algorithm authgate offers, and a
    client cannot register it."""
    document = await discovery(op)
    assert "none" not in document["id_token_signing_alg_values_supported"]
    clients = {"web": {**CLIENTS["web"], "id_token_signed_response_alg": "none"}}
    with pytest.raises(ConfigError, match="id_token_signed_response_alg"):
        load_config(tmp_path, {"rest": {"public_url": ISSUER}, "clients": clients})


async def test_oidcc_scope_address(op: Op) -> None:
    """Skipped by the suite (with discovery): ``address`` is not in ``scopes_supported``,
    and authgate has no address claim to give."""
    document = await discovery(op)
    assert "address" not in document["scopes_supported"]
    assert "address" not in document["claims_supported"]


async def test_oidcc_scope_phone(op: Op) -> None:
    """Skipped by the suite (with discovery): ``phone`` is not in ``scopes_supported``,
    and authgate has no phone claims to give."""
    document = await discovery(op)
    assert "phone" not in document["scopes_supported"]
    assert not {"phone_number", "phone_number_verified"} & set(document["claims_supported"])


async def test_oidcc_scope_all(op: Op) -> None:
    """Skipped by the suite unless all four of profile, email, address and phone are
    advertised: two are, two are not."""
    scopes = set((await discovery(op))["scopes_supported"])
    assert {"profile", "email"} <= scopes
    assert not {"address", "phone"} <= scopes


async def test_request_objects_are_said_to_be_unsupported(op: Op) -> None:
    """The request-object modules run (no signing algorithms listed to skip them by) and
    accept request_not_supported / request_uri_not_supported, which authgate answers."""
    document = await discovery(op)
    assert document["request_parameter_supported"] is False
    assert document["request_uri_parameter_supported"] is False
    assert document["claims_parameter_supported"] is False


async def test_rfc8414_authorization_server_metadata_is_the_discovery_document(op: Op) -> None:
    """An OAuth client (an MCP client, say) finds the same issuer, grants, endpoints and
    methods under RFC 8414's well-known name, with the same caching."""
    response = await op.client.get("/.well-known/oauth-authorization-server")
    assert response.status == 200
    assert response.content_type == "application/json"
    assert response.headers["Cache-Control"] == "public, max-age=300"
    document = await response.json()
    assert document == await discovery(op)
    # RFC 8414 section 2: issuer, the two endpoints and response types are required; section
    # 3.3: the issuer is the one the metadata was asked of.
    assert document["issuer"] == ISSUER
    for name in ("authorization_endpoint", "token_endpoint", "response_types_supported"):
        assert document[name]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert set(document["grant_types_supported"]) >= {"authorization_code", "refresh_token"}
