"""The development identity provider: an OpenID Connect provider of the service's own, mounted
at ``/dev/idp`` when ``dev.identity_provider`` is true (never in production).

The default configuration points ``google``, ``facebook`` and ``apple`` at it, each in its real
counterpart's shape, so a sign-in on a fresh clone exercises the real adapters end to end.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from authgate.entrypoints.app.config import Config, local_url
from authgate.entrypoints.devidp.clients import (
    APPLE_CLIENT_SECRET_JWT,
    ClientSetupError,
    clients_from_config,
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
    "dev_issuer",
    "from_config",
]


def dev_issuer(config: Config) -> str:
    """The provider's issuer: ``dev.issuer``, else ``http://{rest.host}:{rest.port}/dev/idp``."""
    if config.dev.issuer is not None:
        issuer = config.dev.issuer.rstrip("/")
        parts = urlsplit(issuer)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path != BASE_PATH:
            raise ClientSetupError(f"dev.issuer: must be an http(s) URL ending with {BASE_PATH}")
        return issuer
    return local_url(config) + BASE_PATH


def create_missing_apple_keys(config: Config) -> list[str]:
    """Create the development Apple key file of every Apple-shaped provider that points at the
    development provider and whose ``private_key_file`` does not exist yet. Returns the paths
    created."""
    issuer = dev_issuer(config)
    created = []
    for provider in config.providers.values():
        if (
            provider.token_endpoint_auth == APPLE_CLIENT_SECRET_JWT
            and provider.private_key_file is not None
            and is_dev_provider(provider, issuer)
            and ensure_apple_key_file(provider.private_key_file)
        ):
            created.append(provider.private_key_file)
    return created


def from_config(config: Config) -> DevIdentityProvider:
    """The provider with its clients read from the configuration."""
    issuer = dev_issuer(config)
    return DevIdentityProvider(issuer, clients_from_config(config, issuer))
