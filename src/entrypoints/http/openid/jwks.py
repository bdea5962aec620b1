"""``GET /.well-known/jwks.json``: the service's public keys, so that other services can verify
sessions (docs/integration.md) and applications the OpenID Provider's ID tokens."""

from __future__ import annotations

import attrs

from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import Jwks, PublicKey
from authgate.entrypoints.http.common.operations import Operations, operation
from authgate.entrypoints.rest import Call, Reply
from authgate.ports.session_tokens import SessionTokens

# Public, the same for everyone, and cacheable, but briefly: a rotated key is published by the
# same restart that starts signing with it, and a shared cache (a CDN) cannot tell that a token
# names a key it lacks, as a verifier does before it fetches again (docs/integration.md).
KEY_SET_CACHING = {"Cache-Control": "public, max-age=60"}
# The members of a public JWK the answer carries (any other is left out).
_MEMBERS = tuple(a.name for a in attrs.fields(PublicKey))


@attrs.define(slots=False, eq=False)
class JwksOperations(Operations):
    """The service's public keys (a JSON Web Key Set), on the account's tag."""

    tag = docs.ACCOUNT

    sessions: SessionTokens

    @operation(
        "GET",
        "/.well-known/jwks.json",
        response=Jwks,
        operation_id="session_keys",
        summary="Session token keys (JWKS)",
        description="The public keys that verify the service's session tokens, for "
        "other services, and, when applications are registered, the ID and access tokens "
        "of its OpenID Provider (a JSON Web Key Set; cacheable for a minute).",
    )
    async def jwks(self, call: Call[None]) -> Reply[Jwks]:
        keys = [
            PublicKey(**{m: k.get(m) for m in _MEMBERS})
            for k in self.sessions.public_jwks()["keys"]
        ]
        return Reply(Jwks(keys), headers=KEY_SET_CACHING)
