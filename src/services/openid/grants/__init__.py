"""The OpenID Provider's token endpoint as a use case: the grants of an authenticated client,
one module each, chosen by ``grant_type`` in :data:`GRANTS` (a new grant is one module and
one row there); the tokens they issue are built in :mod:`authgate.services.openid.issuing`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from authgate.domain.openid.clients import Client
from authgate.domain.openid.refusals import (
    OAuthInvalidRequest,
    UnauthorizedClient,
    UnsupportedGrantType,
)
from authgate.ports.clock import Clock
from authgate.ports.jose import TokenSigner
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.openid.grants.authorization_code import (
    AUTHORIZATION_CODE,
    AuthorizationCodeGrant,
)
from authgate.services.openid.grants.base import Grant, GrantContext
from authgate.services.openid.grants.client_credentials import (
    CLIENT_CREDENTIALS,
    ClientCredentialsGrant,
)
from authgate.services.openid.grants.device_code import DEVICE_CODE, DeviceCodeGrant
from authgate.services.openid.grants.refresh_token import REFRESH_TOKEN, RefreshTokenGrant
from authgate.services.openid.issuing import IssuedTokens, TokenIssuer

GRANTS: Mapping[str, Callable[[GrantContext], Grant]] = {
    AUTHORIZATION_CODE: AuthorizationCodeGrant,
    REFRESH_TOKEN: RefreshTokenGrant,
    CLIENT_CREDENTIALS: ClientCredentialsGrant,
    DEVICE_CODE: DeviceCodeGrant,
}
"""The grants the token endpoint serves, by ``grant_type``."""

__all__ = ["GRANTS", "IssuedTokens", "TokenService"]


class TokenService:
    """Spends codes and refresh tokens, and issues clients their own tokens, for the clients that
    :class:`~authgate.services.openid.client_authentication.ClientAuthentication` authenticated."""

    def __init__(self, *, signer: TokenSigner, units: UnitOfWork, clock: Clock) -> None:
        context = GrantContext(TokenIssuer(signer), units, clock)
        self.handlers = {grant_type: make(context) for grant_type, make in GRANTS.items()}

    async def grant(self, client: Client, form: Mapping[str, str]) -> IssuedTokens:
        """The token response for ``form`` (each field once) from ``client``; raises an
        :class:`~authgate.domain.openid.refusals.OAuthError`."""
        grant_type = form.get("grant_type")
        if not grant_type:
            raise OAuthInvalidRequest("grant_type is missing")
        handler = self.handlers.get(grant_type)
        if handler is None:
            raise UnsupportedGrantType(
                "grant_type must be " + _one_of(list(self.handlers)),
                f"unsupported grant_type {grant_type[:40]!r}",
            )
        if grant_type not in client.grant_types:
            raise UnauthorizedClient(
                f"the client may not use the grant type {grant_type}",
                f"client {client.client_id!r}: grant_type {grant_type} is not registered",
            )
        return await handler(client, form)


def _one_of(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))
