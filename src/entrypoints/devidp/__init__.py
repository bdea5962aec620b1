"""The development identity provider: an OpenID Connect provider of the service's own, mounted
at ``/dev/idp`` when ``dev.identity_provider`` is true (never in production).

The default configuration points ``google``, ``facebook`` and ``apple`` at it, each in its real
counterpart's shape, so a sign-in on a fresh clone exercises the real adapters end to end.
"""

from __future__ import annotations

from authgate.entrypoints.devidp.clients import (
    APPLE_CLIENT_SECRET_JWT,
    ClientSetupError,
    Providers,
    dev_clients,
    is_dev_provider,
)
from authgate.entrypoints.devidp.grants import GrantStore
from authgate.entrypoints.devidp.keys import ensure_apple_key_file
from authgate.entrypoints.devidp.pages import BASE_PATH
from authgate.entrypoints.devidp.provider import DevIdentityProvider

__all__ = [
    "BASE_PATH",
    "ClientSetupError",
    "DevIdentityProvider",
    "GrantStore",
    "create_missing_apple_keys",
    "dev_clients",
]


def create_missing_apple_keys(providers: Providers, issuer: str) -> list[str]:
    """Create the development Apple key file of every Apple-shaped provider that points at the
    development provider and whose ``private_key_file`` does not exist yet. Returns the paths
    created."""
    created = []
    for provider, _ in providers.values():
        if (
            provider.token_endpoint_auth == APPLE_CLIENT_SECRET_JWT
            and provider.private_key_file is not None
            and is_dev_provider(provider, issuer)
            and ensure_apple_key_file(provider.private_key_file)
        ):
            created.append(provider.private_key_file)
    return created
