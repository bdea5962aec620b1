"""Upstream identity providers: one generic OAuth 2.0 / OpenID Connect adapter, configured
per provider."""

from authgate.adapters.provider.provider import OAuthIdentityProvider
from authgate.adapters.provider.settings import (
    ALLOWED_ID_TOKEN_ALGORITHMS,
    ProviderSettings,
    ProviderSettingsError,
)

__all__ = [
    "ALLOWED_ID_TOKEN_ALGORITHMS",
    "OAuthIdentityProvider",
    "ProviderSettings",
    "ProviderSettingsError",
]
