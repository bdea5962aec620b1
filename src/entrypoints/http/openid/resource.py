"""The OpenID Provider's endpoints around an issued token, as the composition root registers
them together: :mod:`~.userinfo`, :mod:`~.revocation` and :mod:`~.introspection`, each its own
module."""

from __future__ import annotations

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


class ResourceOperations:
    """Registers userinfo, revocation and introspection."""

    def __init__(
        self,
        access: TokenAccess,
        clients: ClientRegistry,
        client_auth: ClientAuthentication,
        cors: PublicClientCors,
        introspection_limiter: RateLimiter,
        userinfo_limiter: RateLimiter | None = None,
        client_address: ClientAddress | None = None,
    ) -> None:
        self.userinfo = UserInfoOperations(access, clients, cors, userinfo_limiter, client_address)
        self.revocation = RevocationOperations(access, client_auth, cors)
        self.introspection = IntrospectionOperations(access, client_auth, introspection_limiter)

    def register(self, api: Api) -> None:
        """Registers the three endpoints, in the order the API document lists them."""
        self.userinfo.register(api)
        self.revocation.register(api)
        self.introspection.register(api)
