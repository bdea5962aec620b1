"""Keys of the development identity provider.

* The ID-token signing key is generated at start and lives only in memory (ephemeral): a
  restart publishes a new key set, which is exactly the key rotation the adapter must handle.
* A development Apple key file (the client's ES256 private key) is created when missing, so the
  default configuration runs with no credentials at all.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from authgate.adapters.files import create_private_file

ID_TOKEN_ALGORITHM = "RS256"  # noqa: S105 - an algorithm name


class SigningKey:
    """An RSA key that signs ID tokens; its public half is served as the provider's JWKS."""

    def __init__(self) -> None:
        self.kid = f"dev-{secrets.token_hex(8)}"
        self._key = RSAKey.generate_key(
            2048, parameters={"kid": self.kid, "use": "sig", "alg": ID_TOKEN_ALGORITHM}
        )

    def sign(self, claims: dict[str, Any]) -> str:
        return jwt.encode(
            {"alg": ID_TOKEN_ALGORITHM, "kid": self.kid, "typ": "JWT"},
            claims,
            self._key,
            algorithms=[ID_TOKEN_ALGORITHM],
        )

    def public_jwks(self) -> dict[str, Any]:
        return {"keys": [self._key.as_dict(private=False)]}


def ensure_apple_key_file(path: str | Path) -> bool:
    """Create a P-256 private key in PEM at ``path`` (mode 0600, whatever the umask; missing
    folders 0700) unless the file exists.

    Returns True when it created the file. Creation is exclusive, so two processes starting
    at once cannot overwrite each other's key.
    """
    target = Path(path)
    if target.exists():
        return False
    pem = ECKey.generate_key("P-256", private=True).as_pem(private=True)
    fd = create_private_file(target)  # its missing folders 0700
    if fd is None:
        return False
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return True
