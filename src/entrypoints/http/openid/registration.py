"""``POST /oauth2/register`` (RFC 7591) and ``GET``/``PUT``/``DELETE
/oauth2/register/{client_id}`` (RFC 7592), mounted only while ``registration.enabled``.

The body is a JSON object of client metadata; members the provider does not know are ignored.
A registration presents an initial access token as a Bearer token unless registration is open;
the management operations present the client's registration access token. Refusals are RFC
7591 section 3.2.2's (``invalid_redirect_uri``, ``invalid_client_metadata``) and RFC 6750's for
the tokens (401 ``invalid_token``, also for a client that does not exist: RFC 7592 section
2.1). Every request is counted per client address against ``ratelimit.registration``."""

from __future__ import annotations

import json
from typing import Any

import attrs
from aiohttp import web

from authgate.domain.openid.refusals import (
    InvalidAccessToken,
    NoAccessToken,
    OAuthInvalidRequest,
    OAuthRateLimited,
)
from authgate.domain.openid.registration import (
    InvalidClientMetadata,
    InvalidRedirectUri,
    StoredClient,
)
from authgate.entrypoints.http.common.bodies import OAuthErrorBody
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.errors import OAUTH_NO_STORE, oauth_example
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.openid.discovery import REGISTRATION_PATH, ProviderOperations
from authgate.entrypoints.http.openid.pages import any_address
from authgate.entrypoints.http.openid.userinfo import bearer_token
from authgate.entrypoints.rest import Call, json_response, path, pattern
from authgate.ports.ratelimit import RateLimiter
from authgate.services.openid.registration import ClientRegistration, Registered

JSON = "application/json"
CLIENT_PATH = REGISTRATION_PATH + "/{client_id}"
_CLIENT_ID = path(
    "client_id",
    pattern(r"^[!-~]{1,255}$"),
    description="The client_id the registration answered.",
)


@attrs.frozen
class ClientMetadataBody:
    """RFC 7591 section 2's client metadata (the members the provider reads; others are
    ignored). Defaults: client_secret_basic, the authorization_code grant, the code response
    type, every scope a registrant may have."""

    redirect_uris: list[str] | None = None
    token_endpoint_auth_method: str | None = None
    grant_types: list[str] | None = None
    response_types: list[str] | None = None
    client_name: str | None = None
    client_uri: str | None = None
    logo_uri: str | None = None
    scope: str | None = None
    jwks: dict[str, Any] | None = None
    post_logout_redirect_uris: list[str] | None = None
    resources: list[str] | None = None


@attrs.frozen
class ClientInformation:
    """RFC 7591 section 3.2.1's client information response: the client's credentials (its
    secret and registration access token only when it registers, once) and its metadata as
    registered, defaults filled."""

    client_id: str
    client_id_issued_at: int
    registration_client_uri: str
    token_endpoint_auth_method: str
    grant_types: list[str]
    response_types: list[str]
    scope: str
    client_secret: str | None = None
    client_secret_expires_at: int | None = None
    registration_access_token: str | None = None
    redirect_uris: list[str] | None = None
    client_name: str | None = None
    client_uri: str | None = None
    logo_uri: str | None = None
    jwks: dict[str, Any] | None = None
    post_logout_redirect_uris: list[str] | None = None
    resources: list[str] | None = None


_ERRORS = {status: OAuthErrorBody for status in (400, 401, 429)}
_REFUSALS = (
    oauth_example(InvalidRedirectUri("redirect_uris: 'http://example.com/cb' must be https")),
    oauth_example(InvalidClientMetadata("grant_types: client_credentials is not offered")),
    oauth_example(InvalidAccessToken("example")),
    oauth_example(OAuthRateLimited(60)),
)


def client_information(
    client: StoredClient, uri: str, secret: str | None = None, token: str | None = None
) -> dict[str, Any]:
    """The client information response's members (RFC 7591 section 3.2.1)."""
    body: dict[str, Any] = {
        "client_id": client.client_id,
        "client_id_issued_at": int(client.created_at.timestamp()),
    }
    if secret is not None:
        body["client_secret"] = secret
        body["client_secret_expires_at"] = 0  # it does not expire
    if token is not None:
        body["registration_access_token"] = token
    body["registration_client_uri"] = uri
    return {**body, **client.metadata.document()}


@attrs.define(slots=False, eq=False)
class RegistrationOperations(ProviderOperations):
    """The registration endpoint and the registered clients' configuration endpoints."""

    registration: ClientRegistration
    issuer: str
    limiter: RateLimiter | None = None  # ratelimit.registration, per client address
    client_address: ClientAddress = attrs.field(default=None, converter=any_address)

    @operation(
        "POST",
        REGISTRATION_PATH,
        raw_body={JSON: ClientMetadataBody},
        response=ClientInformation,
        status=201,
        responses=_ERRORS,
        operation_id="register_client",
        summary="Dynamic client registration",
        description="RFC 7591: registers a client from its metadata and answers its client_id, "
        "its secret (a confidential client's) and its registration access token, each shown "
        "this once. Needs an initial access token (Bearer) unless registration is open. "
        "Public clients (token_endpoint_auth_method none) use PKCE and may redirect to "
        "loopback or private-use-scheme URIs.",
        refusals=_REFUSALS,
    )
    async def register_client(self, call: Call[bytes]) -> web.StreamResponse:
        await self._within_limit(call.request)
        document = _document(call)
        header = call.request.headers.get("Authorization")
        bearer = header is not None and header.strip()[:7].lower() == "bearer "
        # Another scheme is no initial access token (an open registration ignores it).
        token = bearer_token(header, {}) if bearer else None
        registered = await self.registration.register(document, token)
        return self._answer(registered, 201)

    @operation(
        "GET",
        CLIENT_PATH,
        params=[_CLIENT_ID],
        response=ClientInformation,
        responses=_ERRORS,
        operation_id="read_client",
        summary="Read a registered client",
        description="RFC 7592 section 2.1: the client's registered metadata, for its "
        "registration access token (Bearer). The secret is not shown again.",
        refusals=_REFUSALS[2:],
    )
    async def read(self, call: Call[None]) -> web.StreamResponse:
        await self._within_limit(call.request)
        client = await self.registration.read(call.path["client_id"], self._token(call))
        return self._answer(Registered(client), 200)

    @operation(
        "PUT",
        CLIENT_PATH,
        params=[_CLIENT_ID],
        raw_body={JSON: ClientMetadataBody},
        response=ClientInformation,
        responses=_ERRORS,
        operation_id="update_client",
        summary="Update a registered client",
        description="RFC 7592 section 2.2: replaces the client's metadata (the body names the "
        "client_id; members left out take their defaults), for its registration access "
        "token. The secret stays; a client that becomes confidential is given one, shown once.",
        refusals=_REFUSALS,
    )
    async def update(self, call: Call[bytes]) -> web.StreamResponse:
        await self._within_limit(call.request)
        client_id = call.path["client_id"]
        token = self._token(call)
        registered = await self.registration.update(client_id, token, _document(call))
        return self._answer(registered, 200)

    @operation(
        "DELETE",
        CLIENT_PATH,
        params=[_CLIENT_ID],
        status=204,
        responses={204: "The client is removed, its tokens revoked", **_ERRORS},
        operation_id="delete_client",
        summary="Delete a registered client",
        description="RFC 7592 section 2.3: removes the client, revokes its refresh and access "
        "tokens and removes every consent to it.",
        refusals=_REFUSALS[2:],
    )
    async def delete(self, call: Call[None]) -> web.StreamResponse:
        await self._within_limit(call.request)
        await self.registration.delete(call.path["client_id"], self._token(call))
        return web.Response(status=204, headers=OAUTH_NO_STORE)

    def _token(self, call: Call[Any]) -> str:
        header = call.request.headers.get("Authorization")
        if header is None:
            raise NoAccessToken()
        return bearer_token(header, {})

    def _answer(self, registered: Registered, status: int) -> web.Response:
        client = registered.client
        uri = f"{self.issuer}{REGISTRATION_PATH}/{client.client_id}"
        body = client_information(client, uri, registered.secret, registered.registration_token)
        return json_response(body, status, OAUTH_NO_STORE)

    async def _within_limit(self, request: web.Request) -> None:
        if self.limiter is None:
            return
        decision = await self.limiter.hit(
            self.client_address.limit_key(self.client_address.of(request))
        )
        if not decision.allowed:
            raise OAuthRateLimited(decision.retry_after_seconds)


def _document(call: Call[bytes]) -> object:
    """The request's JSON body."""
    if call.request.content_type != JSON:
        raise OAuthInvalidRequest("the body must be application/json client metadata")
    try:
        return json.loads(call.body)
    except (ValueError, UnicodeDecodeError):
        raise InvalidClientMetadata("the body is not JSON") from None
