"""``POST /oauth2/revoke`` (RFC 7009): a token of the authenticated client revokes its whole
family; any other token answers 200 too and changes nothing (``token_type_hint`` is not needed:
the token tells its kind). What introspection shares with it: a token the client presents, with
its authentication as at the token endpoint (RFC 6749 section 2.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from authgate.domain.openid.clients import Client
from authgate.domain.openid.refusals import InvalidClient, OAuthInvalidRequest
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import FORM, OAuthErrorBody, oauth_form
from authgate.entrypoints.http.common.errors import OAUTH_NO_STORE, oauth_example
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.openid.cors import PublicClientCors, admit_client
from authgate.entrypoints.http.openid.discovery import REVOCATION_PATH, ProviderOperations
from authgate.entrypoints.rest import Call, Reply
from authgate.services.openid.access import TokenAccess
from authgate.services.openid.client_authentication import ClientAuthentication

# The refusals of any client's request, for the document's examples.
CLIENT_ERRORS = (
    oauth_example(OAuthInvalidRequest("token is required")),
    oauth_example(InvalidClient("example", challenge="Basic")),
)


@attrs.frozen
class PresentedTokenForm:
    """A token the client presents, with its authentication (RFC 6749 section 2.3): the
    same fields for revocation (RFC 7009 section 2.1) and introspection (RFC 7662 section
    2.1)."""

    token: str
    token_type_hint: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    client_assertion: str | None = None
    client_assertion_type: str | None = None


async def authenticated_client(
    client_auth: ClientAuthentication, call: Call[bytes]
) -> tuple[Client, dict[str, str]]:
    """The client that sent ``call`` (authenticated) and the fields of its form."""
    form = oauth_form(call.request.content_type, call.body)
    client = await client_auth.authenticate(call.request.headers.get("Authorization"), form)
    return client, form


def presented_token(form: Mapping[str, Any]) -> str:
    """The form's ``token``; ``invalid_request`` without one."""
    token = form.get("token")
    if not isinstance(token, str) or not token:
        raise OAuthInvalidRequest("token is required")
    return token


@attrs.define(slots=False, eq=False)
class RevocationOperations(ProviderOperations):
    """The revocation endpoint."""

    access: TokenAccess
    client_auth: ClientAuthentication
    cors: PublicClientCors

    @operation(
        "POST",
        REVOCATION_PATH,
        raw_body={FORM: PresentedTokenForm},
        status=200,
        responses={
            200: "Revoked, or not a token of the client (nothing changed)",
            400: OAuthErrorBody,
            401: OAuthErrorBody,
        },
        operation_id="revoke_token",
        summary="Token revocation",
        description="RFC 7009: a refresh or access token of the authenticated client "
        "revokes every token issued with it (the whole grant); any other token is answered "
        "200 too, and changes nothing.",
        examples=docs.error_examples(*CLIENT_ERRORS),
    )
    async def revoke(self, call: Call[bytes]) -> Reply[None]:
        client, form = await authenticated_client(self.client_auth, call)
        admit_client(call.request, client)
        await self.access.revoke(client, presented_token(form))
        return Reply(None, status=200, headers=OAUTH_NO_STORE)
