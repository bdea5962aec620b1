"""The OpenID Provider's endpoints around an issued token, as the composition root registers
them together: :mod:`~.userinfo`, :mod:`~.revocation` and :mod:`~.introspection`, each its own
module."""

from __future__ import annotations

import attrs

from authgate.domain.openid.clients import ClientRegistry
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.openid.cors import PublicClientCors
from authgate.entrypoints.http.openid.introspection import IntrospectionOperations
from authgate.entrypoints.http.openid.revocation import RevocationOperations
from authgate.entrypoints.http.openid.userinfo import UserInfoOperations
from authgate.entrypoints.rest import Api
from authgate.ports.ratelimit import RateLimiter
from authgate.services.openid.access import TokenAccess
from authgate.services.openid.client_authentication import ClientAuthentication


@attrs.frozen
class ResourceOperations:
    """Registers userinfo, revocation and introspection."""

    access: TokenAccess
    clients: ClientRegistry
    client_auth: ClientAuthentication
    cors: PublicClientCors
    introspection_limiter: RateLimiter
    userinfo_limiter: RateLimiter | None = None
    client_address: ClientAddress | None = None

    def register(self, api: Api) -> None:
        """Registers the three endpoints, in the order the API document lists them."""
        address = self.client_address
        UserInfoOperations(
            self.access, self.clients, self.cors, self.userinfo_limiter, address
        ).register(api)
        RevocationOperations(self.access, self.client_auth, self.cors).register(api)
        IntrospectionOperations(self.access, self.client_auth, self.introspection_limiter).register(
            api
        )
