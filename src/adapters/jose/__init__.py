"""The service's own keys and what it signs or seals with them: session tokens, the OpenID
Provider's ID, access and logout tokens, and provider tokens sealed at rest."""

from .keys import SessionKeyError, ephemeral_keys, load_or_create_keys
from .sealer import JweTokenSealer, SealingKey, SealingKeyError
from .session_tokens import JwtSessionTokens
from .signing import JwtTokenSigner

__all__ = [
    "JweTokenSealer",
    "JwtSessionTokens",
    "JwtTokenSigner",
    "SealingKey",
    "SealingKeyError",
    "SessionKeyError",
    "ephemeral_keys",
    "load_or_create_keys",
]
