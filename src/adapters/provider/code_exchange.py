"""The code exchange at the provider's token endpoint, and how authgate authenticates there:
``client_secret_post`` (RFC 6749 2.3.1), ``client_secret_basic``, or
``apple_client_secret_jwt`` (an ES256 JWT minted from the team id, key id and private key,
reused until shortly before it expires). The secret never goes into a URL.
"""

from __future__ import annotations

import base64
import math
from typing import Any
from urllib.parse import quote_plus

import attrs
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey

from authgate.adapters.http_fetch import ProviderHttp, oauth_error_code
from authgate.adapters.provider.settings import (
    CLIENT_SECRET_BASIC,
    ProviderSettings,
    ProviderSettingsError,
)
from authgate.domain.model import ProviderToken
from authgate.ports.clock import Clock
from authgate.ports.provider import ExchangeFailed


@attrs.frozen
class TokenResponse:
    """The tokens of the token endpoint's answer."""

    access_token: str = attrs.field(repr=False)
    id_token: str | None = attrs.field(repr=False)
    refresh_token: str | None = attrs.field(default=None, repr=False)

    def to_revoke(self) -> ProviderToken:
        """The token whose revocation ends the grant: the refresh token when one was issued
        (RFC 7009 2.1), else the access token."""
        if self.refresh_token:
            return ProviderToken(self.refresh_token, "refresh_token")
        return ProviderToken(self.access_token, "access_token")


async def redeem(
    http: ProviderHttp,
    client_auth: ClientAuthenticator,
    token_endpoint: str,
    code: str,
    redirect_uri: str,
    code_verifier: str | None,
) -> TokenResponse:
    """The tokens the provider answers for ``code``; raises ExchangeFailed."""
    credentials = client_auth.credentials()
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        **credentials.form,
    }
    if code_verifier is not None:
        form["code_verifier"] = code_verifier
    what = f"provider {http.name}: token endpoint"
    answer = await http.call(
        "POST", token_endpoint, what, ExchangeFailed, headers=credentials.headers, data=form
    )
    if not 200 <= answer.status < 300:
        error = oauth_error_code(answer.body)
        detail = f" (error={error})" if error else ""
        raise ExchangeFailed(f"{what} answered HTTP {answer.status}{detail}")
    return _token_response(answer.body, what)


def _token_response(body: Any, what: str) -> TokenResponse:
    """A successful answer's tokens: a bearer access token, perhaps an ID token."""
    if not isinstance(body, dict):
        raise ExchangeFailed(f"{what} answered a body that is not a JSON object")
    access_token = body.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        raise ExchangeFailed(f"{what}: the answer has no access_token")
    token_type = body.get("token_type")
    if token_type is not None and (
        not isinstance(token_type, str) or token_type.lower() != "bearer"
    ):
        raise ExchangeFailed(f"{what}: the token type is not bearer")
    id_token = body.get("id_token")
    if id_token is not None and not isinstance(id_token, str):
        raise ExchangeFailed(f"{what}: id_token is not a string")
    refresh_token = body.get("refresh_token")
    return TokenResponse(
        access_token=access_token,
        id_token=id_token or None,
        refresh_token=refresh_token if isinstance(refresh_token, str) else None,
    )


@attrs.frozen
class ClientCredentials:
    """What the token request carries to authenticate the client."""

    form: dict[str, str]
    headers: dict[str, str] = attrs.field(factory=dict)


class AppleClientSecret:
    """Mints and caches the ES256 client-secret JWT of Sign in with Apple."""

    def __init__(self, settings: ProviderSettings, clock: Clock) -> None:
        assert settings.team_id and settings.key_id and settings.private_key_pem
        self._settings = settings
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
        settings = self._settings
        token = jwt.encode(
            {"alg": "ES256", "kid": settings.key_id},
            {
                "iss": settings.team_id,
                "iat": iat,
                "exp": exp,
                "aud": settings.issuer,
                "sub": settings.client_id,
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
                {"client_id": settings.client_id, "client_secret": self._apple.current()}
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
            {"client_id": settings.client_id, "client_secret": settings.client_secret}
        )
