"""The configuration of one identity provider, as the adapter needs it.

The YAML configuration's ``providers.<name>`` is read straight into these settings (the
composition root's ``ProviderConfig`` adds what the entry points use), validated as they are
made. ``private_key_file`` is read into ``private_key_pem`` when the adapter is opened.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

import attrs

from authgate.domain.login_proof import DEFAULT_SIGNIN_MAX_AGE, GOOGLE_ISSUERS, proves_login_time

TokenEndpointAuth = Literal["client_secret_post", "client_secret_basic", "apple_client_secret_jwt"]
ResponseMode = Literal["query", "form_post"]
RevocationAuth = Literal["client", "none"]


CLIENT_SECRET_POST: TokenEndpointAuth = "client_secret_post"  # noqa: S105 - a method name
CLIENT_SECRET_BASIC: TokenEndpointAuth = "client_secret_basic"  # noqa: S105
APPLE_CLIENT_SECRET_JWT: TokenEndpointAuth = "apple_client_secret_jwt"  # noqa: S105

# Public-key signature algorithms only: never "none", never a MAC (HS*) keyed by a secret
# that a public-key provider does not have (the HS256-with-the-RSA-public-key attack).
ALLOWED_ID_TOKEN_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)

TUNING = {"tuning": True}  # a field's metadata: the adapter's tuning, not a configuration key


class ProviderSettingsError(ValueError):
    """The provider settings are inconsistent; the text names the provider and the field."""


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):  # "openid email" would otherwise become letters
        return tuple(value.split())
    return tuple(value)


@attrs.frozen
class ProviderSettings:
    """One configured provider. ``issuer`` set: OpenID Connect (an ID token is verified,
    endpoints not given come from discovery); unset: plain OAuth 2.0 (the identity comes from
    ``profile_endpoint`` or ``userinfo_endpoint``). ``apple_client_secret_jwt``: the client
    secret is an ES256 JWT minted from ``team_id``, ``key_id`` and ``private_key_pem``."""

    name: str
    client_id: str
    scopes: tuple[str, ...] = attrs.field(converter=_strings)
    client_secret: str | None = attrs.field(default=None, repr=False)
    issuer: str | None = None
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    jwks_uri: str | None = None
    userinfo_endpoint: str | None = None
    profile_endpoint: str | None = None
    token_endpoint_auth: TokenEndpointAuth = CLIENT_SECRET_POST
    id_token_algorithms: tuple[str, ...] = attrs.field(
        default=("RS256", "ES256"), converter=_strings
    )
    team_id: str | None = None
    key_id: str | None = None
    private_key_pem: str | None = attrs.field(default=None, repr=False)
    private_key_file: str | None = None
    """Where ``private_key_pem`` is read from when the adapter is opened."""
    response_mode: ResponseMode = "query"
    pkce: bool = True
    timeout_seconds: float = 10.0
    additional_issuers: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    """Other exact ``iss`` values the provider uses for the same issuer (Google documents
    ``accounts.google.com`` beside ``https://accounts.google.com``)."""
    trusted_audiences: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    """Audiences an ID token may name beside the client id (OIDC Core 3.1.3.7 step 3); a token
    with any other extra audience is refused, even when its ``azp`` is the client id."""
    revocation_endpoint: str | None = None
    """RFC 7009; unset: the discovery document's, if any. A provider with neither keeps no
    token."""
    revocation_auth: RevocationAuth | None = None
    """How a revocation request authenticates the client: ``client`` as at the token endpoint
    (RFC 7009 2.1; Apple's client-secret JWT), ``none`` the token alone (Google); unset:
    ``none`` for Google's issuer, ``client`` otherwise."""
    require_response_iss: bool = False
    """RFC 9207: refuse an authorization response without ``iss`` even when the provider's
    discovery document does not advertise ``authorization_response_iss_parameter_supported``."""
    signin_max_age_seconds: int | None = DEFAULT_SIGNIN_MAX_AGE
    """``max_age`` sent with every OpenID Connect sign-in, which makes ``auth_time`` a required
    claim (OIDC Core 3.1.2.1); a year, so that the provider practically never asks for a login
    because of it. None sends none."""
    states_auth_time: bool | None = None
    """Whether the ID tokens carry a signed ``auth_time`` (a sign-in proves a recent login).
    Unset: every OpenID Connect provider but Google, which states it only with its "session
    age claims" setting on for the OAuth client (then set true)."""
    # -- tuning (defaults follow the spec; tests shorten them): no configuration key ----------
    leeway_seconds: float = attrs.field(default=60.0, metadata=TUNING)
    """Clock skew allowed on ``exp``, ``iat`` and ``nbf``."""
    jwks_max_age_seconds: float = attrs.field(default=86400.0, metadata=TUNING)
    """How long a fetched key set is used before it is fetched again (spec 8: 24 h)."""
    jwks_min_refetch_seconds: float = attrs.field(default=5.0, metadata=TUNING)
    """The floor between key-set fetch attempts, per cache (see ``jose.key_sets``)."""
    jwks_absent_kid_seconds: float = attrs.field(default=300.0, metadata=TUNING)
    """A ``kid`` that a fetch proved absent from the key set triggers no fetch for this long."""
    discovery_max_age_seconds: float = attrs.field(default=86400.0, metadata=TUNING)
    discovery_retry_seconds: float = attrs.field(default=5.0, metadata=TUNING)
    """After a failed discovery, callers within this interval fail at once without a fetch."""
    client_secret_ttl_seconds: float = attrs.field(default=300.0, metadata=TUNING)
    """Lifetime of the minted Apple client-secret JWT (reused until a minute before expiry)."""
    max_response_bytes: int = attrs.field(default=1 << 20, metadata=TUNING)

    def __attrs_post_init__(self) -> None:
        problems = list(self._problems())
        if problems:
            raise ProviderSettingsError(f"provider {self.name!r}: {problems[0]}")

    @property
    def uses_id_token(self) -> bool:
        """OpenID Connect: the token response carries an ID token to verify."""
        return self.issuer is not None

    @property
    def proves_login_time(self) -> bool:
        """Whether a sign-in through this provider can prove when the person logged in (a
        signed ``auth_time``): :attr:`states_auth_time`, or its default."""
        return proves_login_time(self.issuer, self.states_auth_time)

    @property
    def revocation_authenticates(self) -> bool:
        """Whether a revocation request carries the client's authentication."""
        if self.revocation_auth is not None:
            return self.revocation_auth == "client"
        return self.issuer not in GOOGLE_ISSUERS

    @property
    def is_apple(self) -> bool:
        return self.token_endpoint_auth == APPLE_CLIENT_SECRET_JWT

    def _problems(self) -> Iterable[str]:
        if not self.name:
            yield "name: must not be empty"
        if not self.client_id:
            yield "client_id: must not be empty"
        if self.token_endpoint_auth not in get_args(TokenEndpointAuth):
            yield f"token_endpoint_auth: unknown method {self.token_endpoint_auth!r}"
        if self.issuer is None:
            if self.authorization_endpoint is None or self.token_endpoint is None:
                yield "needs issuer (discovery) or authorization_endpoint and token_endpoint"
            if self.profile_endpoint is None and self.userinfo_endpoint is None:
                yield "without issuer (no ID token) needs profile_endpoint or userinfo_endpoint"
        if self.is_apple:
            for field in ("team_id", "key_id"):
                if not getattr(self, field):
                    yield f"{field}: required for apple_client_secret_jwt"
            if not (self.private_key_pem or self.private_key_file):
                yield "private_key_file: required for apple_client_secret_jwt"
            if self.issuer is None:
                yield "issuer: required for apple_client_secret_jwt (it is the JWT's audience)"
        elif not self.client_secret:
            yield "client_secret: required"
        if self.profile_endpoint is not None and not self.client_secret:
            yield "client_secret: required for profile_endpoint (appsecret_proof)"
        if not self.id_token_algorithms:
            yield "id_token_algorithms: must not be empty"
        for alg in self.id_token_algorithms:
            if alg not in ALLOWED_ID_TOKEN_ALGORITHMS:
                yield (
                    f"id_token_algorithms: {alg!r} is not allowed "
                    f"(allowed: {', '.join(sorted(ALLOWED_ID_TOKEN_ALGORITHMS))})"
                )
        if self.states_auth_time and not self.uses_id_token:
            yield "states_auth_time: only a provider with ID tokens (issuer) signs auth_time"
        if self.signin_max_age_seconds is not None and not 0 < self.signin_max_age_seconds <= (
            10 * DEFAULT_SIGNIN_MAX_AGE
        ):
            yield "signin_max_age_seconds: must be between 1 and 3650 days in seconds"
        if self.revocation_auth not in (None, *get_args(RevocationAuth)):
            yield f"revocation_auth: unknown method {self.revocation_auth!r}"
        if self.response_mode not in get_args(ResponseMode):
            yield f"response_mode: unknown mode {self.response_mode!r}"
        for field in (
            "timeout_seconds",
            "jwks_max_age_seconds",
            "discovery_max_age_seconds",
            "client_secret_ttl_seconds",
            "max_response_bytes",
        ):
            if getattr(self, field) <= 0:
                yield f"{field}: must be positive"
        for field in (
            "leeway_seconds",
            "jwks_min_refetch_seconds",
            "jwks_absent_kid_seconds",
            "discovery_retry_seconds",
        ):
            if getattr(self, field) < 0:
                yield f"{field}: must not be negative"
        if self.client_secret_ttl_seconds > 15777000:  # Apple's maximum: six months
            yield "client_secret_ttl_seconds: at most 15777000 (six months)"
