"""Client authentication at the token endpoint.

* ``client_secret_post``: client id and secret in the form body (RFC 6749 2.3.1);
* ``client_secret_basic``: HTTP Basic with the form-urlencoded id and secret;
* ``apple_client_secret_jwt``: the secret is an ES256 JWT that the client mints from its team
  id (``iss``), key id (``kid`` header) and private key, with ``sub`` = client id and
  ``aud`` = the provider's issuer; short-lived, reused until shortly before it expires.

The secret never goes into a URL.
"""

from __future__ import annotations

import base64
import math
from urllib.parse import quote_plus

import attrs
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey

from authgate.adapters.provider.settings import (
    CLIENT_SECRET_BASIC,
    ProviderSettings,
    ProviderSettingsError,
)
from authgate.ports.clock import Clock


@attrs.frozen
class ClientCredentials:
    """What the token request carries to authenticate the client."""

    form: dict[str, str]
    headers: dict[str, str]


class AppleClientSecret:
    """Mints and caches the ES256 client-secret JWT of Sign in with Apple."""

    def __init__(self, settings: ProviderSettings, clock: Clock) -> None:
        assert settings.team_id and settings.key_id and settings.private_key_pem
        assert settings.issuer is not None
        self._team_id = settings.team_id
        self._key_id = settings.key_id
        self._client_id = settings.client_id
        self._audience = settings.issuer
        self._ttl = settings.client_secret_ttl_seconds
        self._clock = clock
        self._key = _load_p256_private_key(settings.private_key_pem, settings.name)
        self._cached: tuple[str, float] | None = None  # (jwt, exp)

    def current(self) -> str:
        now = self._clock.now().timestamp()
        margin = min(60.0, self._ttl / 2)
        if self._cached is not None and self._cached[1] - margin > now:
            return self._cached[0]
        iat = math.floor(now)
        exp = iat + math.floor(self._ttl)
        token = jwt.encode(
            {"alg": "ES256", "kid": self._key_id},
            {
                "iss": self._team_id,
                "iat": iat,
                "exp": exp,
                "aud": self._audience,
                "sub": self._client_id,
            },
            self._key,
            algorithms=["ES256"],
            default_type=None,
        )
        self._cached = (token, float(exp))
        return token


def _load_p256_private_key(pem: str, provider: str) -> ECKey:
    try:
        key = ECKey.import_key(pem)
    except (JoseError, ValueError, TypeError):
        raise ProviderSettingsError(
            f"provider {provider!r}: private key: not an EC private key in PEM"
        ) from None
    if not key.is_private or key.curve_name != "P-256":
        raise ProviderSettingsError(
            f"provider {provider!r}: private key: must be a P-256 (ES256) private key"
        )
    return key


class ClientAuthenticator:
    """Produces the credentials of one provider's token requests."""

    def __init__(self, settings: ProviderSettings, clock: Clock) -> None:
        self._settings = settings
        self._apple = AppleClientSecret(settings, clock) if settings.is_apple else None

    def credentials(self) -> ClientCredentials:
        settings = self._settings
        if self._apple is not None:
            return ClientCredentials(
                form={"client_id": settings.client_id, "client_secret": self._apple.current()},
                headers={},
            )
        assert settings.client_secret is not None
        if settings.token_endpoint_auth == CLIENT_SECRET_BASIC:
            pair = f"{quote_plus(settings.client_id)}:{quote_plus(settings.client_secret)}"
            basic = base64.b64encode(pair.encode()).decode("ascii")
            return ClientCredentials(
                form={"client_id": settings.client_id},
                headers={"Authorization": f"Basic {basic}"},
            )
        return ClientCredentials(
            form={"client_id": settings.client_id, "client_secret": settings.client_secret},
            headers={},
        )


__all__ = ["AppleClientSecret", "ClientAuthenticator", "ClientCredentials"]
