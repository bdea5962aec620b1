"""The ``client_credentials`` grant (RFC 6749 section 4.4): a confidential client asks for an
access token for itself, no person involved.

Only a confidential client registered with the grant gets here (the token endpoint
authenticated it as registered: ``client_secret_basic``, ``client_secret_post`` or
``private_key_jwt``; :class:`~authgate.services.openid.grants.TokenService` refused a client
without the grant). The token's ``sub`` is the ``client_id`` (RFC 9068 section 2.2); there is
no ID token, no refresh token and no ``sid``.

Scopes come from the client's ``allowed_scopes``, less the scopes that speak for a person
(:data:`PERSON_SCOPES`: asked for here they are ``invalid_scope``, since no person granted
them). A request without ``scope`` gets every other scope the client is allowed (RFC 6749
section 3.3's pre-defined default), possibly none. ``resource`` (RFC 8707, repeatable) names
the resource servers the token is for, each registered in the client's ``resources``.
"""

from __future__ import annotations

from collections.abc import Mapping

from authgate.domain.openid.clients import SUPPORTED_SCOPES, Client
from authgate.domain.openid.refusals import InvalidScope, UnauthorizedClient
from authgate.services.openid.grants.base import (
    MAX_PARAMETER_LENGTH,
    GrantContext,
    requested_resources,
)
from authgate.services.openid.issuing import IssuedTokens

CLIENT_CREDENTIALS = "client_credentials"

PERSON_SCOPES = frozenset(SUPPORTED_SCOPES)
"""The OpenID Connect scopes: a person's claims and refresh tokens, never a client's own."""


class ClientCredentialsGrant:
    """Issues access tokens to confidential clients for themselves (RFC 6749 section 4.4)."""

    def __init__(self, context: GrantContext) -> None:
        self.context = context

    async def __call__(self, client: Client, form: Mapping[str, str]) -> IssuedTokens:
        """The access token ``client`` earns for itself; raises
        :class:`~authgate.domain.openid.refusals.InvalidScope`,
        :class:`~authgate.domain.openid.refusals.InvalidTarget` or
        :class:`~authgate.domain.openid.refusals.UnauthorizedClient`."""
        if client.is_public:
            # The configuration never registers one so; a public client cannot authenticate.
            raise UnauthorizedClient(
                "a public client may not use client_credentials",
                f"public client {client.client_id!r} asked for client_credentials",
            )
        scopes = client_scopes(client, form.get("scope"))
        resources = requested_resources(client, form)
        now = self.context.clock.now()
        return self.context.issuer.client_tokens(client, scopes, resources, now)


def client_scopes(client: Client, scope: str | None) -> tuple[str, ...]:
    """The scopes of a client's own token: those asked, each allowed to the client and none a
    person's; without ``scope``, every non-person scope the client is allowed, sorted."""
    if scope is None:
        return tuple(sorted(client.allowed_scopes - PERSON_SCOPES))
    if len(scope) > MAX_PARAMETER_LENGTH:
        raise InvalidScope("scope is too long")
    asked = tuple(dict.fromkeys(scope.split()))
    personal = [s for s in asked if s in PERSON_SCOPES]
    if personal:
        raise InvalidScope(
            "a client's own token has no person's scope: " + " ".join(personal),
            f"client {client.client_id!r} asked client_credentials for {' '.join(personal)}",
        )
    refused = [s for s in asked if s not in client.allowed_scopes]
    if refused:
        raise InvalidScope(
            "scope not allowed for this client: " + " ".join(s[:80] for s in refused[:5])
        )
    return asked
