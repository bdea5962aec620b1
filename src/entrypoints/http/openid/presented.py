"""What revocation and introspection share: a token the client presents, with its
authentication as at the token endpoint (RFC 6749 section 2.3). Errors of the client (its
authentication, a malformed form) are RFC 6749 section 5.2's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from authgate.domain.openid.clients import Client
from authgate.domain.openid.refusals import InvalidClient, OAuthInvalidRequest
from authgate.entrypoints.http.common.bodies import oauth_form
from authgate.entrypoints.http.common.errors import oauth_example
from authgate.entrypoints.rest import Call
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
