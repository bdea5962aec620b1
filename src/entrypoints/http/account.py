"""``GET /v1/account/providers`` (spec 4.4) and the public session keys."""

from __future__ import annotations

from authgate.entrypoints.http.bodies import Jwks, LinkedProvider, LinkedProviders, PublicKey
from authgate.entrypoints.rest import Api, BearerJWT, Call
from authgate.ports.accounts import AccountRepository
from authgate.ports.sessions import SessionTokens

READ_SCOPES = ("account:read", "account:manage")


class AccountOperations:
    def __init__(
        self, accounts: AccountRepository, sessions: SessionTokens, bearer: BearerJWT
    ) -> None:
        self.accounts = accounts
        self.sessions = sessions
        self.bearer = bearer

    def register(self, api: Api) -> None:
        # Spec 4.4 and 2.9: the bearer JWT only (one security requirement). Browser pages,
        # whose session cookie is HttpOnly, read the same list from GET /v1/account.
        api.operation(
            "GET",
            "/v1/account/providers",
            response=LinkedProviders,
            security=[self.bearer.with_scopes(*READ_SCOPES)],
            operation_id="list_linked_providers",
            tags=("account",),
        )(self.linked_providers)
        api.operation(
            "GET",
            "/.well-known/jwks.json",
            response=Jwks,
            operation_id="session_keys",
            tags=("account",),
        )(self.jwks)

    async def linked_providers(self, call: Call[None]) -> LinkedProviders:
        assert call.principal is not None
        linked = await self.accounts.list_identities(call.principal.subject)
        return LinkedProviders(
            [
                LinkedProvider(
                    provider=i.identity.provider,
                    provider_id=f"user:{i.identity.provider}:{i.identity.subject}",
                    linked_at=i.linked_at,
                    is_primary=i.is_primary,
                )
                for i in linked
            ]
        )

    async def jwks(self, call: Call[None]) -> Jwks:
        return Jwks(
            [
                PublicKey(
                    kty=k["kty"],
                    kid=k["kid"],
                    use=k.get("use"),
                    alg=k.get("alg"),
                    crv=k.get("crv"),
                    x=k.get("x"),
                    y=k.get("y"),
                )
                for k in self.sessions.public_jwks()["keys"]
            ]
        )
