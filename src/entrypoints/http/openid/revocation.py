"""``POST /oauth2/revoke`` (RFC 7009): a token of the authenticated client revokes its whole
family; any other token answers 200 too and changes nothing (``token_type_hint`` is not needed:
the token tells its kind)."""

from __future__ import annotations

import attrs

from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import FORM, OAuthErrorBody
from authgate.entrypoints.http.common.errors import OAUTH_NO_STORE
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.openid.cors import PublicClientCors, admit_client
from authgate.entrypoints.http.openid.discovery import REVOCATION_PATH, ProviderOperations
from authgate.entrypoints.http.openid.presented import (
    CLIENT_ERRORS,
    PresentedTokenForm,
    authenticated_client,
    presented_token,
)
from authgate.entrypoints.rest import Call, Reply
from authgate.services.openid.access import TokenAccess
from authgate.services.openid.client_authentication import ClientAuthentication


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
