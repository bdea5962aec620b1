"""``GET /.well-known/openid-configuration`` and ``GET /.well-known/oauth-authorization-server``:
what the provider supports, and where; a pure function of the configuration
(:func:`provider_metadata`). One document answers both: RFC 8414 section 2 takes OpenID Connect
Discovery's names, so an OAuth client (an MCP client, say) and an OpenID Connect one read the
same grants, endpoints and methods. Request objects and the ``claims`` parameter are said to be
unsupported (OpenID Connect Discovery section 3)."""

from __future__ import annotations

from typing import Any

import attrs

from authgate.domain.openid.clients import (
    ASSERTION_ALGORITHMS,
    AUTH_METHODS,
    ID_TOKEN_ALGORITHMS,
    SUPPORTED_SCOPES,
)
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import ProviderMetadata
from authgate.entrypoints.http.common.operations import Operations, operation
from authgate.entrypoints.rest import Call, Reply
from authgate.entrypoints.rest.wire import make_converter
from authgate.services.openid.grants import GRANTS

DISCOVERY_PATH = "/.well-known/openid-configuration"
AUTHORIZATION_SERVER_PATH = "/.well-known/oauth-authorization-server"
JWKS_PATH = "/.well-known/jwks.json"
AUTHORIZE_PATH = "/oauth2/authorize"
TOKEN_PATH = "/oauth2/token"  # noqa: S105 - a path
USERINFO_PATH = "/oauth2/userinfo"
REVOCATION_PATH = "/oauth2/revoke"
INTROSPECTION_PATH = "/oauth2/introspect"
END_SESSION_PATH = "/oauth2/logout"
DEVICE_AUTHORIZATION_PATH = "/oauth2/device_authorization"
REGISTRATION_PATH = "/oauth2/register"


class ProviderOperations(Operations):
    """An endpoint of the OpenID Provider: its operations under the provider's tag."""

    tag = docs.OPENID_PROVIDER


# The claims an ID token or the userinfo answer may carry: the ID token's own, and the
# profile (name) and email scopes' claims.
_ID_TOKEN_CLAIMS = ("iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "sid", "at_hash")
CLAIMS = (*_ID_TOKEN_CLAIMS, "name", "email", "email_verified")
PROMPTS = ("none", "login", "consent")
# Changes only with the configuration, that is with a restart.
DISCOVERY_CACHING = {"Cache-Control": "public, max-age=300"}


def provider_metadata(
    issuer: str, *, metadata_documents: bool = False, registration: bool = False
) -> ProviderMetadata:
    """The discovery document of the provider whose issuer identifier is ``issuer``;
    ``metadata_documents``: whether a client_id may be the URL of a client ID metadata
    document (said only when it may); with ``registration``, its registration endpoint (RFC
    7591) too."""
    # Revocation and introspection authenticate the client as the token endpoint does;
    # introspection is for confidential clients only, so never without authentication.
    authenticated: list[str] = [m for m in AUTH_METHODS if m != "none"]
    return ProviderMetadata(
        issuer=issuer,
        authorization_endpoint=issuer + AUTHORIZE_PATH,
        token_endpoint=issuer + TOKEN_PATH,
        userinfo_endpoint=issuer + USERINFO_PATH,
        jwks_uri=issuer + JWKS_PATH,
        revocation_endpoint=issuer + REVOCATION_PATH,
        introspection_endpoint=issuer + INTROSPECTION_PATH,
        end_session_endpoint=issuer + END_SESSION_PATH,
        scopes_supported=list(SUPPORTED_SCOPES),
        response_types_supported=["code"],
        response_modes_supported=["query", "form_post"],
        grant_types_supported=list(GRANTS),
        subject_types_supported=["public"],
        id_token_signing_alg_values_supported=list(ID_TOKEN_ALGORITHMS),
        token_endpoint_auth_methods_supported=list(AUTH_METHODS),
        token_endpoint_auth_signing_alg_values_supported=list(ASSERTION_ALGORITHMS),
        revocation_endpoint_auth_methods_supported=list(AUTH_METHODS),
        revocation_endpoint_auth_signing_alg_values_supported=list(ASSERTION_ALGORITHMS),
        introspection_endpoint_auth_methods_supported=authenticated,
        introspection_endpoint_auth_signing_alg_values_supported=list(ASSERTION_ALGORITHMS),
        code_challenge_methods_supported=["S256"],
        claims_supported=list(CLAIMS),
        prompt_values_supported=list(PROMPTS),
        authorization_response_iss_parameter_supported=True,
        backchannel_logout_supported=True,
        backchannel_logout_session_supported=True,
        request_parameter_supported=False,
        request_uri_parameter_supported=False,
        claims_parameter_supported=False,
        device_authorization_endpoint=issuer + DEVICE_AUTHORIZATION_PATH,
        client_id_metadata_document_supported=True if metadata_documents else None,
        registration_endpoint=issuer + REGISTRATION_PATH if registration else None,
    )


_converter = make_converter()


def openid_configuration(issuer: str) -> dict[str, Any]:
    """The discovery document as JSON, as the operation answers it."""
    document: dict[str, Any] = _converter.unstructure(provider_metadata(issuer))
    return document


@attrs.define(slots=False, eq=False)
class DiscoveryOperations(ProviderOperations):
    """Serves the discovery document (public, the same for everyone, cacheable)."""

    metadata: ProviderMetadata

    @operation(
        "GET",
        DISCOVERY_PATH,
        response=ProviderMetadata,
        operation_id="openid_configuration",
        summary="OpenID Provider discovery document",
        description="What the OpenID Provider supports and where its endpoints are "
        "(OpenID Connect Discovery 1.0); cacheable for five minutes.",
    )
    async def discovery(self, call: Call[None]) -> Reply[ProviderMetadata]:
        return Reply(self.metadata, headers=DISCOVERY_CACHING)

    @operation(
        "GET",
        AUTHORIZATION_SERVER_PATH,
        response=ProviderMetadata,
        operation_id="oauth_authorization_server",
        summary="OAuth 2.0 authorization server metadata",
        description="The discovery document under RFC 8414's name: every grant, endpoint and "
        "client authentication method of the provider; cacheable for five minutes.",
    )
    async def authorization_server(self, call: Call[None]) -> Reply[ProviderMetadata]:
        return Reply(self.metadata, headers=DISCOVERY_CACHING)
