"""The YAML configuration: environment substitution, strict typing, one-line errors.

``${VAR}`` and ``${VAR:-default}`` are replaced from the environment before the YAML is parsed.
Every key is typed; an unknown key, a wrong type or bad YAML raises :class:`ConfigError` with one
line naming the key and the problem. Only ``rest``, ``otel.service.name`` and
``otel.sdk.disabled`` are required; every other section has defaults
(docs/operations.md, config.example.yaml).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args, get_origin
from urllib.parse import urlsplit

import attrs
import cattrs
import yaml
from cattrs.errors import IterableValidationNote
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from authgate.adapters.provider.settings import ProviderSettings
from authgate.domain.openid.clients import (
    AUTH_METHODS,
    AUTHORIZATION_CODE_GRANT,
    CLIENT_CREDENTIALS_GRANT,
    DEFAULT_GRANT_TYPES,
    GRANT_TYPES,
    MAX_CODE_LIFETIME,
    MIN_SECRET_LENGTH,
    REFRESH_TOKEN_GRANT,
    SECRET_METHODS,
    SUPPORTED_SCOPES,
    AuthMethod,
    Client,
    ClientRegistry,
    IdTokenAlgorithm,
    SecretDigest,
    grant_types_problem,
    needs_redirect_uris,
    origins_of,
    public_jwks_problem,
    redirect_uri_problem,
    resource_problem,
)
from authgate.domain.rates import parse_many
from authgate.entrypoints.rest.cors import normalise_origin
from authgate.entrypoints.rest.eventloop import EventLoop, default_event_loop, uvloop_available
from authgate.entrypoints.rest.wire import describe_error, make_converter, wire_field, wire_name


class ConfigError(Exception):
    """A configuration problem, worded for one line on stderr."""


class StartupError(Exception):
    """The service cannot start as configured (something the configuration names cannot be
    opened or used); the text is one line for stderr, printed with exit status 2."""


Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _valid(problem_of: Callable[[Any], str | None]) -> Validator:
    """An attrs validator of one setting (None is always valid): ``name: problem``, to which
    :func:`_key_error` adds the section's path."""

    def validate(_: Any, a: attrs.Attribute[Any], value: Any) -> None:
        problem = None if value is None else problem_of(value)
        if problem is not None:
            raise ValueError(f"{wire_name(a)}: {problem}")

    return validate


def _rule(problem: str, holds: Callable[[Any], bool]) -> Validator:
    """``problem`` (``{!r}`` in it the value) unless ``holds(value)``."""
    return _valid(lambda v: None if holds(v) else problem.format(v))


def _between(low: int, high: int) -> Validator:
    return _rule(f"must be between {low} and {high}", lambda v: low <= v <= high)


def _one_rate(value: str) -> bool:
    # One limit, of at least one request: "0/minute" would refuse everyone, and limits
    # would silently take only the first of "5/minute;100/hour".
    try:
        items = parse_many(value)
    except ValueError:
        return False
    return len(items) == 1 and items[0].amount >= 1


def _origin_problem(value: str) -> str | None:
    try:
        normalise_origin(value)
    except ValueError as e:  # "*" included: with credentials every site could read accounts
        return str(e)
    return None


def _is_network(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return True


_POSITIVE = _rule("must be positive", lambda v: v > 0)
_AT_LEAST_1 = _rule("must be at least 1", lambda v: v >= 1)
_PORT = _between(1, 65535)
_POLL = _rule("must be between 0 and 3600", lambda v: 0 < v <= 3600)
_ORIGINS = _valid(lambda origins: next(filter(None, map(_origin_problem, origins)), None))
_RATE_PROBLEM = "{!r} is not one rate limit such as '10/minute'"
_RATE = _rule(_RATE_PROBLEM, _one_rate)
_OPTIONAL_RATE = _rule(_RATE_PROBLEM, lambda v: not v or _one_rate(v))  # empty: no limit


def _setting(default: Any, *validators: Validator) -> Any:
    """A setting with its default and its own rules."""
    return attrs.field(default=default, validator=list(validators))


@attrs.frozen
class RestConfig:
    port: int = attrs.field(validator=_PORT)
    host: str = "127.0.0.1"
    max_body_bytes: int = 1 << 20
    shutdown_timeout_seconds: float = 30.0
    access_log: bool = True
    # The service's own public address (scheme://host[:port]) as browsers see it, behind any
    # proxy: the origin that cookie-authenticated changes must come from. Unset: the origin
    # each request was made to (scheme and Host), right only without a TLS-terminating proxy.
    public_url: str | None = None
    # uvloop when it is importable, else asyncio.
    event_loop: EventLoop = attrs.field(factory=default_event_loop)
    # Worker processes sharing rest.port through SO_REUSEPORT (app.workers).
    workers: int = _setting(1, _AT_LEAST_1)


@attrs.frozen
class OtelServiceConfig:
    name: str


@attrs.frozen
class OtelSdkConfig:
    disabled: bool


@attrs.frozen
class OtelConfig:
    service: OtelServiceConfig
    sdk: OtelSdkConfig


@attrs.frozen
class MetricsConfig:
    """``metrics.enabled``: count and serve ``GET /metrics`` (Prometheus text format).

    On a listener of its own (loopback, 9464 — the OpenTelemetry Prometheus exporter's port —
    by default), never where the API is unless asked: the counts tell an outsider how many
    people sign in, fail and from which providers. ``metrics.port: null`` serves it on
    ``rest.port``, for a deployment whose proxy keeps ``/metrics`` from the public."""

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int | None = _setting(9464, _PORT)


def _origin_of(url: str) -> str:
    """The origin of a URL as a browser names it (its path dropped); the URL itself when it
    has none, so that the check of ``app.allowed_origins`` names it."""
    parts = urlsplit(url.strip())
    try:
        return normalise_origin(f"{parts.scheme}://{parts.netloc}")
    except ValueError:
        return url


@attrs.frozen
class AppConfig:
    """The front-end application (the spec's {app_url}) and where the callback sends users.

    ``allowed_origins``: the origins whose pages may call the account operations and sign-out
    with the session cookie (CORS with credentials) and make cookie-authenticated changes; by
    default the origin of ``url``; ``[]``: none.
    """

    url: str = "http://localhost:3000"
    callback_urls: list[str] = attrs.field(factory=list)
    allowed_origins: list[str] = attrs.field(
        default=attrs.Factory(lambda app: [_origin_of(app.url)], takes_self=True),
        validator=_ORIGINS,
    )
    login_path: str = "/login"
    onboarding_path: str = "/onboarding"
    dashboard_path: str = "/dashboard"


@attrs.frozen
class DatabaseConfig:
    url: str = "sqlite:///./var/authgate.db"
    pool_min_size: int = 1
    pool_max_size: int = _setting(10, _AT_LEAST_1)
    timeout_seconds: float = 5.0
    readiness_timeout_seconds: float = 1.0
    event_retention_days: int = _setting(90, _POSITIVE)


@attrs.frozen
class SessionConfig:
    ttl_seconds: int = _setting(86400, _POSITIVE)
    keys_file: str = "./var/session-keys.json"
    generate_keys: bool = False
    issuer: str = "authgate"
    audience: str = "authgate"
    # Sliding sessions: a session used after half its lifetime gets a renewed cookie (a new
    # token, same session), up to absolute_max_seconds since the sign-in; false: never.
    sliding: bool = True
    absolute_max_seconds: int = 30 * 86400
    # RFC 9470: linking, unlinking, ending other sessions need a sign-in no older than this.
    reauthenticate_after_seconds: int = _setting(600, _POSITIVE)
    # How long a session found live is trusted without asking the store: the bound on how
    # long another instance may accept a revoked session when the revocation channel is down.
    revocation_cache_seconds: float = _setting(5.0, _between(0, 60))
    # auto = Redis when ratelimit.storage is Redis, else PostgreSQL LISTEN/NOTIFY on a
    # PostgreSQL database, else this process only.
    revocation_channel: Literal["auto", "redis", "postgres", "local"] = "auto"


@attrs.frozen
class StateConfig:
    ttl_seconds: int = _setting(600, _POSITIVE)
    require_binding_cookie: bool = True
    store: Literal["database", "memory"] = "database"
    # Past it new initiations answer 503 (live ones are never evicted). The database stores
    # are bounded by the initiation limit.
    memory_max_entries: int = _setting(100_000, _POSITIVE)


@attrs.frozen
class RateLimitConfig:
    """Per-client limits (``limits`` syntax, "10/minute") in one store, memory or Redis; null
    or empty switches an optional one off (docs/security.md, "Rate limits"). Clients are
    counted by address: IPv4 as it is, an IPv4-mapped address as its IPv4 address, IPv6 by its
    network of ``ipv6_prefix`` bits.

    ``token`` counts a confidential client by its client_id once it authenticated (its back
    end makes every request of its users), a public client by client_id and address (anyone
    can name one: one address must not spend its users' budget). ``token_address`` counts
    every token request of an address (keep it above the token budgets of the clients a back
    end serves), ``token_failures`` the failed ones, which once spent refuse the address's
    token requests for the rest of the window. ``initiation`` stores a pending sign-in each
    time; each ``authorize`` of a signed-in browser writes a code. ``passkeys``: a sign-in
    spends two.
    """

    storage: str = "memory://"
    callback: str = _setting("10/minute", _RATE)
    provider_events: str = _setting("60/minute", _RATE)
    initiation: str | None = _setting("60/minute", _OPTIONAL_RATE)
    token: str | None = _setting("3000/minute", _OPTIONAL_RATE)
    token_address: str | None = _setting("6000/minute", _OPTIONAL_RATE)
    token_failures: str | None = _setting("60/minute", _OPTIONAL_RATE)
    authorize: str | None = _setting("300/minute", _OPTIONAL_RATE)
    userinfo: str | None = _setting("6000/minute", _OPTIONAL_RATE)
    logout: str | None = _setting("60/minute", _OPTIONAL_RATE)
    introspection: str | None = _setting(None, _OPTIONAL_RATE)
    # Dynamic client registration (POST /oauth2/register and its management), per address.
    registration: str | None = _setting("20/hour", _OPTIONAL_RATE)
    passkeys: str = _setting("20/minute", _RATE)
    # The device verification page (RFC 8628), per client address: every request naming a user
    # code, and every device authorization request; and the codes that found nothing.
    device: str | None = _setting("60/minute", _OPTIONAL_RATE)
    device_failures: str | None = _setting("20/hour", _OPTIONAL_RATE)
    trusted_proxies: list[str] = attrs.field(
        factory=list,
        validator=attrs.validators.deep_iterable(
            _rule("{!r} is not an address or network", _is_network)
        ),
    )
    ipv6_prefix: int = _setting(64, _between(1, 128))
    fail_open: bool = True
    # How long connecting to Redis, or one answer of it, may take before it counts as
    # unreachable (and fail_open decides).
    redis_timeout_seconds: float = _setting(
        0.5, _rule("must be above 0 and at most 30", lambda v: 0 < v <= 30)
    )


@attrs.frozen
class PasskeysConfig:
    """Passkeys (WebAuthn), a sign-in method beside the providers.

    ``rp_id``: a domain that every origin in ``origins`` is or is under (unset: the host of
    :func:`openid_issuer`); passkeys are bound to it, so changing it later orphans every
    passkey made. ``origins``: the pages that may run the ceremonies (unset: the service's own
    origin and ``app.allowed_origins``). The timeouts are what browsers are told and at most
    300 s, the life of a challenge. ``memory_max_challenges`` bounds the memory store; the
    database stores are bounded by ``ratelimit.passkeys`` and their purge."""

    enabled: bool = False
    rp_id: str | None = None
    rp_name: str = "authgate"
    origins: list[str] | None = None
    registration_timeout_seconds: int = 300
    authentication_timeout_seconds: int = 300
    memory_max_challenges: int = 100_000


@attrs.frozen
class ProviderTokenKeyConfig:
    """A key that seals provider tokens at rest: its id (stored with each sealed token) and
    32 random bytes in base64url."""

    id: str
    secret: str = attrs.field(repr=False)


@attrs.frozen
class ProviderTokensConfig:
    """Provider tokens kept (sealed) for revocation, and the revocation worker.

    ``keys``: the first seals, every one opens (rotation: a new key first, the old one kept
    until ``authgate provider-tokens rekey`` re-sealed its tokens). No keys: no token is kept
    and nothing can be revoked at the providers."""

    keys: list[ProviderTokenKeyConfig] = attrs.field(factory=list)
    retry_initial_seconds: float = _setting(10.0, _POSITIVE)
    retry_max_seconds: float = _setting(3600.0, _POSITIVE)
    give_up_after_seconds: float = _setting(7 * 86400.0, _POSITIVE)
    # Longer than a revocation request may take (providers' timeout_seconds).
    lease_seconds: float = _setting(60.0, _rule("must be at least 5", lambda v: v >= 5))
    poll_seconds: float = _setting(5.0, _POLL)


@attrs.frozen
class LogoutTokensConfig:
    """The delivery of back-channel logout tokens to the registered clients: each is retried
    with a doubling delay from ``retry_initial_seconds`` up to ``retry_max_seconds`` until the
    client answers 2xx, and given up (audited) ``give_up_after_seconds`` after the session
    ended. ``timeout_seconds`` bounds one delivery; ``lease_seconds`` (longer) is how long an
    instance holds a delivery before another may try it."""

    retry_initial_seconds: float = _setting(5.0, _POSITIVE)
    retry_max_seconds: float = _setting(600.0, _POSITIVE)
    give_up_after_seconds: float = _setting(86400.0, _POSITIVE)
    lease_seconds: float = 60.0
    poll_seconds: float = _setting(5.0, _POLL)
    timeout_seconds: float = _setting(10.0, _POSITIVE)


@attrs.frozen
class DeviceConfig:
    """The device authorization grant (RFC 8628, docs/openid-provider.md "Devices and
    command-line tools"): how long a device's request waits for the person
    (``expires_in_seconds``) and the seconds a device waits between polls
    (``interval_seconds``, grown by five at each ``slow_down``)."""

    expires_in_seconds: int = _setting(600, _between(60, 1800))
    interval_seconds: int = _setting(5, _between(1, 60))


@attrs.frozen
class ProviderConfig(ProviderSettings):
    """``providers.<name>``: the adapter's own settings (read straight into them, validated
    as they are made), and what the entry points add around the adapter."""

    # Accepted redirect_uri values besides those of app.callback_urls ending /{name}/callback.
    callback_urls: list[str] = attrs.field(factory=list)
    # Provider events (docs/providers.md, "Provider events"): OpenID Connect Back-Channel
    # Logout 1.0, and pushed events (Sign in with Apple notifications for an
    # apple_client_secret_jwt provider, else RISC Security Event Tokens whose keys come from
    # risc_configuration, by default {issuer}/.well-known/risc-configuration).
    backchannel_logout: bool = False
    backchannel_logout_path: str | None = None
    notifications: bool = False
    notifications_path: str | None = None
    risc_configuration: str | None = None
    # Other aud values the provider's event tokens may carry beside client_id (Apple names the
    # primary App ID its notification endpoint is registered on).
    event_audiences: list[str] = attrs.field(factory=list)


@attrs.frozen
class ProviderEventsConfig:
    """How old an event token may be (its ``iat``; its ``jti`` is remembered as long), and
    whether a provider's withdrawal of an account's only sign-in method deletes the account
    (or keeps it and ends its sessions)."""

    max_age_seconds: int = _setting(86400, _POSITIVE)
    delete_account_when_last_identity: bool = True


@attrs.frozen
class DevConfig:
    """Development aids (refused in production): the built-in identity provider at /dev/idp.

    ``issuer``: by default ``http://{rest.host}:{rest.port}/dev/idp`` (127.0.0.1 for a
    wildcard host); it must end with ``/dev/idp``.
    """

    identity_provider: bool = False
    issuer: str | None = None


_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749 section 3.3
_LONGEST_CODE = int(MAX_CODE_LIFETIME.total_seconds())


def _server_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a server's address authgate calls (https, or http on loopback),
    or None."""
    parts = urlsplit(url)
    if parts.fragment or "#" in url:
        return f"{url!r} must not have a fragment"
    if parts.scheme == "https" and parts.hostname and "@" not in parts.netloc:
        return None
    if parts.scheme == "http" and redirect_uri_problem(url, native=False) is None:
        return None
    return f"{url!r} must be an https URL (http only on loopback)"


def _public_jwks_problem(jwks: dict[str, Any]) -> str | None:
    """Why ``jwks`` is not a set of public signature keys joserfc can read, or None."""
    problem = public_jwks_problem(jwks)
    if problem is not None:
        return problem
    try:
        KeySet.import_key_set(jwks)  # type: ignore[arg-type]
    except (JoseError, ValueError, TypeError, KeyError) as e:
        return f"a key cannot be read ({e})"
    return None


@attrs.frozen
class ClientConfig:
    """An application registered with authgate as its OpenID Provider (``clients.<client_id>``).

    ``token_endpoint_auth_method``: unset, ``client_secret_basic`` for a confidential client
    and ``none`` for a public one. ``secrets`` are read once and kept only as salted digests
    (:class:`~authgate.domain.openid.clients.SecretDigest`). ``allowed_origins``: unset, the origins
    of a public client's http(s) redirect URIs; a confidential client is never called from a
    browser."""

    name: str = attrs.field(
        validator=_rule(
            "1 to 100 printable characters",
            lambda n: bool(n.strip()) and len(n) <= 100 and n.isprintable(),
        )
    )
    client_type: Literal["confidential", "public"] = wire_field("type")
    redirect_uris: list[str] = attrs.field(factory=list)
    token_endpoint_auth_method: AuthMethod | None = None
    secrets: list[SecretDigest] = attrs.field(factory=list, repr=False)
    jwks_uri: str | None = None
    jwks: dict[str, Any] | None = None
    post_logout_redirect_uris: list[str] = attrs.field(factory=list)
    backchannel_logout_uri: str | None = _setting(None, _valid(_server_url_problem))
    allowed_scopes: list[str] = attrs.field(
        factory=lambda: list(SUPPORTED_SCOPES),
        # Any RFC 6749 scope token: the OpenID Connect ones for the code flow (which then
        # needs openid: see _check_client), an API's own (mcp:tools) for the client's own
        # tokens (client_credentials).
        validator=attrs.validators.deep_iterable(
            _rule(
                "{!r} is not a scope token (RFC 6749 section 3.3: printable ASCII, no space, "
                "quote or backslash)",
                lambda s: bool(_SCOPE_TOKEN.fullmatch(s)) and len(s) <= 200,
            )
        ),
    )
    first_party: bool = False
    access_token_seconds: int = _setting(300, _between(1, 86400))
    id_token_seconds: int = _setting(300, _between(1, 86400))
    refresh_token_seconds: int = _setting(30 * 86400, _between(1, 365 * 86400))
    code_seconds: int = _setting(_LONGEST_CODE, _between(1, _LONGEST_CODE))
    id_token_signed_response_alg: IdTokenAlgorithm = "RS256"  # noqa: S105 - an algorithm
    introspection: bool = False
    allowed_origins: list[str] | None = None
    # RFC 7591's names: what the client may use at the token endpoint, and the resource
    # servers (RFC 8707) its access tokens may be issued for.
    grant_types: list[str] = attrs.field(factory=lambda: sorted(DEFAULT_GRANT_TYPES))
    resources: list[str] = attrs.field(factory=list)

    @property
    def auth_method(self) -> AuthMethod:
        """The token endpoint authentication method, its default resolved."""
        if self.token_endpoint_auth_method is not None:
            return self.token_endpoint_auth_method
        return "none" if self.client_type == "public" else "client_secret_basic"


_HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


@attrs.frozen
class ClientMetadataDocumentsConfig:
    """Clients described by a client ID metadata document (``client_metadata_documents``):
    a ``client_id`` that is an https URL names a JSON document the provider fetches
    (docs/openid-provider.md, "Clients described by a metadata document"). Off by default;
    when on, the hosts it may fetch from are listed (``allowed_hosts``, exact host names) or
    ``allow_any_host`` says any public host will do. Each fetch is bounded by ``max_bytes``
    and ``timeout_seconds``; a document is kept as its HTTP caching headers say, between
    ``min_cache_seconds`` and ``max_cache_seconds``, a refused one ``failure_cache_seconds``;
    at most ``fetches_per_minute`` fetches a minute from any one host, and
    ``total_fetches_per_minute`` from all of them."""

    enabled: bool = False
    allowed_hosts: list[str] = attrs.field(
        factory=list,
        validator=attrs.validators.deep_iterable(
            _rule(
                "{!r} is not a lower-case host name (such as app.example.com)",
                lambda h: isinstance(h, str) and bool(_HOST_NAME.fullmatch(h)) and len(h) <= 253,
            )
        ),
    )
    allow_any_host: bool = False
    max_bytes: int = _setting(5 * 1024, _between(256, 64 * 1024))
    timeout_seconds: float = _setting(
        3.0, _rule("must be between 0.1 and 10", lambda v: 0.1 <= v <= 10)
    )
    min_cache_seconds: int = _setting(60, _between(0, 86400))
    max_cache_seconds: int = _setting(86400, _between(1, 7 * 86400))
    failure_cache_seconds: int = _setting(0, _between(0, 600))
    fetches_per_minute: int = _setting(10, _between(1, 10000))
    total_fetches_per_minute: int = _setting(300, _between(1, 100000))
    # What such clients may have beyond OpenID Connect's scopes: APIs' scopes (an MCP
    # server's) and the resource servers (RFC 8707) their access tokens may be issued for.
    scopes: list[str] = attrs.field(factory=list)
    resources: list[str] = attrs.field(factory=list)


@attrs.frozen
class RegistrationConfig:
    """Dynamic client registration (RFC 7591, managed by RFC 7592), off unless ``enabled``.

    ``policy``: ``initial_access_token`` (a registration presents a token from ``authgate
    clients token``, good for one registration) or ``open`` (anyone may register). What a
    registrant may ask for: ``grant_types`` (client_credentials only when listed here),
    ``scopes``, whether it may be a ``confidential_clients`` (one with a secret or keys; public
    clients always may), and the ``resources`` (RFC 8707) it may name.
    ``initial_token_seconds``: how long a token of ``authgate clients token`` lasts unless
    its ``--expires-in`` says."""

    enabled: bool = False
    policy: Literal["initial_access_token", "open"] = "initial_access_token"
    grant_types: list[str] = attrs.field(factory=lambda: sorted(DEFAULT_GRANT_TYPES))
    scopes: list[str] = attrs.field(factory=lambda: list(SUPPORTED_SCOPES))
    confidential_clients: bool = True
    resources: list[str] = attrs.field(factory=list)
    initial_token_seconds: int = _setting(86400, _between(60, 365 * 86400))


@attrs.frozen
class Config:
    rest: RestConfig
    otel: OtelConfig
    environment: Literal["development", "production", "test"] = "production"
    app: AppConfig = AppConfig()
    database: DatabaseConfig = DatabaseConfig()
    session: SessionConfig = SessionConfig()
    state: StateConfig = StateConfig()
    ratelimit: RateLimitConfig = RateLimitConfig()
    providers: dict[str, ProviderConfig] = attrs.field(factory=dict)
    provider_events: ProviderEventsConfig = ProviderEventsConfig()
    provider_tokens: ProviderTokensConfig = ProviderTokensConfig()
    dev: DevConfig = DevConfig()
    metrics: MetricsConfig = MetricsConfig()
    # The applications that sign in through authgate as their OpenID Provider, by client_id.
    clients: dict[str, ClientConfig] = attrs.field(factory=dict)
    logout_tokens: LogoutTokensConfig = LogoutTokensConfig()
    device: DeviceConfig = DeviceConfig()
    passkeys: PasskeysConfig = PasskeysConfig()
    client_metadata_documents: ClientMetadataDocumentsConfig = ClientMetadataDocumentsConfig()
    registration: RegistrationConfig = RegistrationConfig()


def provider_on(config: Config) -> bool:
    """Whether authgate is an OpenID Provider: clients are configured, clients may register at
    run time, or clients may be described by metadata documents. Clients the operator added
    (``authgate clients add``) are served then."""
    return (
        bool(config.clients)
        or config.registration.enabled
        or config.client_metadata_documents.enabled
    )


def reserved_client_ids(config: Config) -> frozenset[str]:
    """The client_ids no stored client may take: the configured clients' (which win in every
    lookup anyway) and the session tokens' audience."""
    return frozenset({*config.clients, config.session.audience})


def callback_urls_of(config: Config, provider: str) -> list[str]:
    """The redirect_uri values accepted for ``provider`` (RFC 9207's mix-up defence needs each
    provider's own): its ``callback_urls`` and the ``app.callback_urls`` whose path ends with
    ``/{provider}/callback``, in configuration order."""
    suffix = f"/{provider}/callback"
    configured = config.providers[provider].callback_urls if provider in config.providers else []
    shared = [u for u in config.app.callback_urls if urlsplit(u).path.endswith(suffix)]
    return list(dict.fromkeys([*configured, *shared]))


def receiver_paths(config: Config) -> list[tuple[str, str, str]]:
    """(provider, kind, path) of every enabled event receiver, in configuration order: kind
    ``backchannel_logout`` or ``notifications`` (Apple's, or RISC), at ``<kind>_path``, by
    default ``/v1/providers/{name}/backchannel-logout`` or ``…/notifications``."""
    paths = []
    for name, p in config.providers.items():
        for kind in ("backchannel_logout", "notifications"):
            if getattr(p, kind):
                default = f"/v1/providers/{name}/{kind.replace('_', '-')}"
                paths.append((name, kind, getattr(p, f"{kind}_path") or default))
    return paths


_WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")  # noqa: S104 - compared, not bound


def local_url(config: Config) -> str:
    """``http://{rest.host}:{rest.port}``: the service's address as it listens, 127.0.0.1 for a
    wildcard host (the address a browser on this machine uses)."""
    host = config.rest.host
    if host in _WILDCARD_HOSTS:
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{config.rest.port}"


def openid_issuer(config: Config) -> str:
    """The OpenID Provider's issuer: ``rest.public_url`` (the service's public address) without
    a trailing slash, else :func:`local_url` (development: production requires the public
    URL when clients are registered). Every endpoint of the provider is under it."""
    if config.rest.public_url is not None:
        return config.rest.public_url.strip().rstrip("/")
    return local_url(config)


def passkey_rp_id(config: Config) -> str:
    """``passkeys.rp_id``, else the host of the service's own address."""
    if config.passkeys.rp_id:
        return config.passkeys.rp_id.strip().lower()
    return (urlsplit(openid_issuer(config)).hostname or "").lower()


def passkey_origins(config: Config) -> list[str]:
    """``passkeys.origins``, else the service's own origin and ``app.allowed_origins``."""
    if config.passkeys.origins is not None:
        return [_origin_of(o) for o in config.passkeys.origins]
    return list(dict.fromkeys([_origin_of(openid_issuer(config)), *config.app.allowed_origins]))


def client_registry(config: Config) -> ClientRegistry:
    """The registered clients as the provider's services use them."""
    return ClientRegistry(_client(client_id, c) for client_id, c in config.clients.items())


def _client(client_id: str, c: ClientConfig) -> Client:
    if c.allowed_origins is not None:
        origins = frozenset(normalise_origin(o) for o in c.allowed_origins)
    elif c.client_type == "public":
        origins = origins_of(c.redirect_uris)
    else:
        origins = frozenset()
    return Client(
        client_id=client_id,
        name=c.name,
        client_type=c.client_type,
        token_endpoint_auth_method=c.auth_method,
        redirect_uris=tuple(c.redirect_uris),
        secrets=tuple(c.secrets),
        jwks_uri=c.jwks_uri,
        jwks=json.dumps(c.jwks) if c.jwks is not None else None,
        post_logout_redirect_uris=tuple(c.post_logout_redirect_uris),
        backchannel_logout_uri=c.backchannel_logout_uri,
        allowed_scopes=frozenset(c.allowed_scopes),
        first_party=c.first_party,
        access_token_lifetime=dt.timedelta(seconds=c.access_token_seconds),
        id_token_lifetime=dt.timedelta(seconds=c.id_token_seconds),
        refresh_token_lifetime=dt.timedelta(seconds=c.refresh_token_seconds),
        code_lifetime=dt.timedelta(seconds=c.code_seconds),
        id_token_signed_response_alg=c.id_token_signed_response_alg,
        introspection=c.introspection,
        allowed_origins=origins,
        grant_types=frozenset(c.grant_types),
        resources=frozenset(c.resources),
    )


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# A YAML comment: ``#`` at the start of a line or after a blank, not inside a quoted scalar.
_COMMENT = re.compile(r"""[^'"\n]*?(?<!\S)#""")


def substitute(text: str, env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """Replace ``${VAR}`` / ``${VAR:-default}``; an unset variable with no default is an error,
    and every unset one is named in it (each with its first line), so that one run lists them
    all rather than one per run."""
    unset: dict[str, int] = {}

    def replace(m: re.Match[str]) -> str:
        # A commented-out line (``# client_id: ${GOOGLE_CLIENT_ID}``) stays as it is: an unset
        # variable there must not stop start-up.
        line_start = text.rfind("\n", 0, m.start()) + 1
        if _COMMENT.match(text, line_start, m.start()):
            return m.group(0)
        name, default = m.group(1), m.group(2)
        value = env.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                unset.setdefault(name, text.count("\n", 0, m.start()) + 1)
                return m.group(0)
            return default
        return value

    result = _VAR.sub(replace, text)
    if len(unset) == 1:
        [(name, line)] = unset.items()
        raise ConfigError(f"line {line}: environment variable {name} is not set")
    if unset:
        names = ", ".join(f"{name} (line {line})" for name, line in unset.items())
        raise ConfigError(f"environment variables not set: {names}")
    return result


def parse(text: str) -> Config:
    """Parse configuration text (after environment substitution)."""
    try:
        data = yaml.safe_load(substitute(text))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{where}invalid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError("the file must be a YAML mapping with at least rest and otel")
    try:
        config = _converter.structure(data, Config)
    except (cattrs.BaseValidationError, TypeError, ValueError) as e:
        raise ConfigError(_key_error(e)) from None
    _check(config)
    return config


def variable_of(path: str | Path, setting: str) -> str | None:
    """The environment variable ``setting`` (dotted: ``rest.port``) is read from in the file,
    as in ``port: ${PORT:-8080}``; None when its value is written out (or the file cannot be
    read again). An error about a setting names what the operator changes."""
    try:
        node: Any = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    for key in setting.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    match = _VAR.fullmatch(node.strip()) if isinstance(node, str) else None
    return match.group(1) if match else None


def load(path: str | Path) -> Config:
    """Read and parse a configuration file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read {path}: not UTF-8 text") from None
    return parse(text)


_converter = make_converter()


def _client_secret(value: Any, _: type) -> SecretDigest:
    """A client secret, kept only as its digest from here on (never repeated in a message)."""
    if not isinstance(value, str):
        raise TypeError("expected a string (a secret, usually ${VARIABLE})")
    if len(value) < MIN_SECRET_LENGTH:
        raise ValueError(
            f"each secret must be at least {MIN_SECRET_LENGTH} characters of random text "
            "(openssl rand -base64 32 makes one)"
        )
    return SecretDigest.of(value)


_converter.register_structure_hook(SecretDigest, _client_secret)


def _literal(value: Any, choices: Any) -> Any:
    """One of a fixed set of values, or a message that lists them, sorted: typing caches a
    ``Literal[...] | None`` by its set of values, so the declared order may be another
    module's (the MCP SDK declares the same four authentication methods in another order)."""
    allowed = get_args(choices)
    if not isinstance(value, str | int) or isinstance(value, bool) or value not in allowed:
        raise ValueError(f"must be one of {', '.join(sorted(str(a) for a in allowed))}")
    return value


def _is_literal(kind: Any) -> bool:
    origin: Any = get_origin(kind)
    return origin is Literal


_converter.register_structure_hook_func(_is_literal, _literal)

# Not YAML keys: the name is the key under providers, the key is read from private_key_file
# when the adapter is opened, and the adapter's tuning keeps its defaults (tests shorten it).
_TUNING = (a.name for a in attrs.fields(ProviderSettings) if a.metadata.get("tuning"))
_NOT_KEYS = frozenset({"name", "private_key_pem", *_TUNING})


def _providers(value: Any, _: type) -> dict[str, ProviderConfig]:
    """``providers``: each read straight into the adapter's settings, named by its key."""
    if not isinstance(value, dict):
        raise TypeError("expected a mapping of provider names")
    providers, errors = {}, []
    for name, body in value.items():
        try:
            if not isinstance(body, dict):
                raise TypeError("expected a mapping")
            if _NOT_KEYS & body.keys():
                raise cattrs.ForbiddenExtraKeysError(
                    "", ProviderConfig, set(_NOT_KEYS & body.keys())
                )
            providers[name] = _converter.structure({**body, "name": name}, ProviderConfig)
        except Exception as e:
            note = f"Structuring mapping value @ key {name!r}"
            e.__notes__ = [*getattr(e, "__notes__", []), IterableValidationNote(note, name, Any)]
            errors.append(e)
    if errors:
        raise cattrs.IterableValidationError("providers", errors, dict)
    return providers


_converter.register_structure_hook_func(lambda t: t == dict[str, ProviderConfig], _providers)


_OWN_RULE = re.compile(r"(\w+): (.*)")  # what a setting's own rule (_valid) says


def _key_error(exc: BaseException) -> str:
    """The first error, one of typing before any of a setting's own rule (whose checks once
    came after typing); each error begins with its path, ``$…``."""
    errors = [error.partition(": ")[::2] for error in describe_error(exc).split("; $")]
    path, problem = min(errors, key=lambda error: bool(_OWN_RULE.fullmatch(error[1])))
    key = re.sub(r"\['([^']*)'\]", r".\1", path).removeprefix("$").removeprefix(".")
    if problem.startswith("unknown field(s): "):
        names = problem.removeprefix("unknown field(s): ").split(", ")
        return f"{'.'.join(filter(None, [key, names[0]]))}: unknown key"
    if problem == "required field missing":
        return f"{key}: required key missing"
    own = _OWN_RULE.fullmatch(problem)
    if own is not None:
        key, problem = ".".join(filter(None, [key, own[1]])), own[2]
    return f"{key or '(top level)'}: {problem}"


def _check(config: Config) -> None:
    """The rules between settings, which no one setting's own rule holds."""
    _check_rest(config)
    _check_limits(config)
    if config.passkeys.enabled:
        _check_passkeys(config)
    _check_development(config)
    _check_origins(config)
    _check_providers(config)
    _check_clients(config)
    _check_metadata_documents(config)


def _check_rest(config: Config) -> None:
    if config.rest.event_loop == "uvloop" and not uvloop_available():
        raise ConfigError(
            "rest.event_loop: uvloop is not installed (pip install uvloop), or set asyncio"
        )
    if config.metrics.port == config.rest.port:
        raise ConfigError(
            "metrics.port: must differ from rest.port (null serves /metrics on rest.port)"
        )
    if config.metrics.port is not None and not config.metrics.host.strip():
        raise ConfigError("metrics.host: must be an address to listen on (default 127.0.0.1)")


def _check_limits(config: Config) -> None:
    """Lower bounds of one setting that another sets, and the sealing keys."""
    if config.session.absolute_max_seconds < config.session.ttl_seconds:
        raise ConfigError("session.absolute_max_seconds: must be at least session.ttl_seconds")
    if not 0 <= config.database.pool_min_size <= config.database.pool_max_size:
        raise ConfigError("database.pool_min_size: must be between 0 and database.pool_max_size")
    for name in ("provider_tokens", "logout_tokens"):
        section = getattr(config, name)
        if section.retry_max_seconds < section.retry_initial_seconds:
            raise ConfigError(f"{name}.retry_max_seconds: must be at least retry_initial_seconds")
    if config.logout_tokens.lease_seconds <= config.logout_tokens.timeout_seconds:
        # A delivery still under way when its lease runs out would be sent twice at once.
        raise ConfigError("logout_tokens.lease_seconds: must be longer than timeout_seconds")
    keys = config.provider_tokens.keys
    for key in keys:
        if not key.id or len(key.id) > 64 or not key.id.isprintable():
            raise ConfigError(f"provider_tokens.keys: id {key.id!r}: 1 to 64 characters")
        if _key_bytes(key.secret) != 32:
            # The secret itself is never repeated in a message.
            raise ConfigError(
                f"provider_tokens.keys: key {key.id}: the secret must be 32 random bytes in "
                "base64 (python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
    if len({k.id for k in keys}) != len(keys):
        raise ConfigError("provider_tokens.keys: key ids must be unique")


def _key_bytes(secret: str) -> int:
    """How many bytes a base64 (or base64url) secret holds; 0 when it is not base64."""
    text = secret.strip()
    for decode in (base64.urlsafe_b64decode, base64.standard_b64decode):
        try:
            return len(decode(text + "=" * (-len(text) % 4)))
        except (binascii.Error, ValueError):
            continue
    return 0


def _check_development(config: Config) -> None:
    if config.dev.identity_provider and config.environment != "development":
        production = config.environment == "production"
        refused = "is refused in production" if production else "needs environment: development"
        raise ConfigError(f"dev.identity_provider: the development identity provider {refused}")


def _check_origins(config: Config) -> None:
    if config.rest.public_url is not None:
        try:  # its origin is the one the service's own pages call from
            normalise_origin(_origin_of(config.rest.public_url))
        except ValueError as e:
            raise ConfigError(f"rest.public_url: {e}") from None
    for url in config.app.callback_urls:
        if not any(urlsplit(url).path.endswith(f"/{name}/callback") for name in config.providers):
            raise ConfigError(
                f"app.callback_urls: {url} names no configured provider (its path must end "
                "with /{provider}/callback); list it under providers.<name>.callback_urls"
            )


def _check_providers(config: Config) -> None:
    """What the entry points add to each provider's own settings (checked as they are made):
    its name, and its event receivers."""
    for name in config.providers:
        if not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
            raise ConfigError(f"providers.{name}: identifiers are lower-case letters and digits")
    seen: set[str] = set()
    for name, kind, path in receiver_paths(config):
        if config.providers[name].issuer is None:
            raise ConfigError(
                f"providers.{name}.{kind}: needs issuer (the provider's signed event tokens "
                "are verified with its issuer and keys)"
            )
        if not re.fullmatch(r"(/[A-Za-z0-9._~-]+)+", path):
            raise ConfigError(
                f"providers.{name}: receiver path {path!r} must be an absolute path of plain "
                "segments"
            )
        if path in seen or path.startswith(("/v1/auth/", "/v1/account", "/health/", "/dev/")):
            raise ConfigError(f"providers.{name}: receiver path {path} is already in use")
        seen.add(path)


_CLIENT_ID = re.compile(r"[\x21-\x7e]{1,255}")  # RFC 6749 appendix A.1, without the space


def _check_clients(config: Config) -> None:
    _check_registration(config)
    if not provider_on(config):
        return
    if config.environment == "production":
        public_url = config.rest.public_url
        if public_url is None or urlsplit(public_url.strip()).scheme != "https":
            raise ConfigError(
                "clients: the OpenID Provider needs rest.public_url, an https URL (its "
                "issuer), in production"
            )
    for client_id, client in config.clients.items():
        _check_client(config, client_id, client)


def _check_registration(config: Config) -> None:
    r = config.registration
    for grant_type in r.grant_types:
        if grant_type not in GRANT_TYPES:
            raise ConfigError(
                f"registration.grant_types: {grant_type!r} is not a grant type of the provider "
                f"({', '.join(GRANT_TYPES)})"
            )
    if not set(r.grant_types) - {REFRESH_TOKEN_GRANT}:
        raise ConfigError(
            "registration.grant_types: needs authorization_code, client_credentials or the "
            "device code grant"
        )
    if CLIENT_CREDENTIALS_GRANT in r.grant_types and not r.confidential_clients:
        raise ConfigError(
            "registration.grant_types: client_credentials is for confidential clients, which "
            "registration.confidential_clients: false refuses"
        )
    for scope in r.scopes:
        # OpenID Connect's, or an API's own (an MCP server's mcp:tools, say).
        if not _SCOPE_TOKEN.fullmatch(scope):
            raise ConfigError(f"registration.scopes: {scope!r} is not a scope token")
    if not r.scopes:
        raise ConfigError("registration.scopes: at least one scope")
    for resource in r.resources:
        problem = resource_problem(resource)
        if problem is not None:
            raise ConfigError(f"registration.resources: {resource!r} {problem}")


def _check_metadata_documents(config: Config) -> None:
    documents = config.client_metadata_documents
    key = "client_metadata_documents"
    if documents.allow_any_host and documents.allowed_hosts:
        raise ConfigError(f"{key}: allowed_hosts or allow_any_host, not both")
    if not documents.enabled:
        return
    if not documents.allowed_hosts and not documents.allow_any_host:
        raise ConfigError(
            f"{key}: enabled needs allowed_hosts (the hosts whose documents may describe "
            "clients) or allow_any_host: true"
        )
    if documents.max_cache_seconds < documents.min_cache_seconds:
        raise ConfigError(f"{key}.max_cache_seconds: must be at least min_cache_seconds")
    for scope in documents.scopes:
        if not _SCOPE_TOKEN.fullmatch(scope):
            raise ConfigError(f"{key}.scopes: {scope!r} is not a scope token")
    for resource in documents.resources:
        problem = resource_problem(resource)
        if problem is not None:
            raise ConfigError(f"{key}.resources: {resource!r} {problem}")


def _check_client(config: Config, client_id: str, c: ClientConfig) -> None:
    key = f"clients.{client_id}"
    if not _CLIENT_ID.fullmatch(client_id):
        raise ConfigError(f"{key}: a client_id is 1 to 255 printable ASCII characters, no space")
    if client_id == config.session.audience:
        # A token for this client would then carry the audience of session tokens.
        raise ConfigError(f"{key}: a client_id must differ from session.audience")
    _check_client_authentication(key, c)
    problem = grant_types_problem(c.grant_types, c.client_type)
    if problem is not None:
        raise ConfigError(f"{key}.grant_types: {problem}")
    if needs_redirect_uris(c.grant_types) and not c.redirect_uris:
        raise ConfigError(f"{key}.redirect_uris: at least one redirect URI")
    if AUTHORIZATION_CODE_GRANT in c.grant_types and "openid" not in c.allowed_scopes:
        raise ConfigError(f"{key}.allowed_scopes: must include openid (the code flow needs it)")
    for resource in c.resources:
        problem = resource_problem(resource)
        if problem is not None:
            raise ConfigError(f"{key}.resources: {resource!r} {problem}")
        if resource == config.session.audience:
            # An access token for it would then carry the audience of session tokens.
            raise ConfigError(f"{key}.resources: {resource!r} is session.audience")
    for setting in ("redirect_uris", "post_logout_redirect_uris"):
        for uri in getattr(c, setting):
            problem = redirect_uri_problem(uri, native=c.client_type == "public")
            if problem is not None:
                raise ConfigError(f"{key}.{setting}: {uri!r} {problem}")
    if c.introspection and c.client_type == "public":
        raise ConfigError(
            f"{key}.introspection: only a confidential client may introspect (a public one "
            "cannot authenticate)"
        )
    if c.allowed_origins and c.client_type == "confidential":
        raise ConfigError(
            f"{key}.allowed_origins: only public clients are called from browsers; a "
            "confidential client keeps its secret on a server"
        )
    for allowed in c.allowed_origins or []:
        problem = _origin_problem(allowed)
        if problem is not None:
            raise ConfigError(f"{key}.allowed_origins: {problem}")


def _check_client_authentication(key: str, c: ClientConfig) -> None:
    method = c.auth_method
    if c.client_type == "public" and method != "none":
        raise ConfigError(
            f"{key}.token_endpoint_auth_method: a public client cannot keep a secret; its "
            "method is none"
        )
    if c.client_type == "confidential" and method == "none":
        raise ConfigError(
            f"{key}.token_endpoint_auth_method: a confidential client authenticates with "
            f"one of {', '.join(m for m in AUTH_METHODS if m != 'none')}"
        )
    if method in SECRET_METHODS and not c.secrets:
        raise ConfigError(f"{key}.secrets: {method} needs at least one secret")
    if method not in SECRET_METHODS and c.secrets:
        raise ConfigError(
            f"{key}.secrets: only a client_secret_basic or client_secret_post client has secrets"
        )
    if method != "private_key_jwt":
        if c.jwks_uri is not None or c.jwks is not None:
            raise ConfigError(f"{key}: jwks_uri and jwks are the keys of private_key_jwt")
        return
    if (c.jwks_uri is None) == (c.jwks is None):
        raise ConfigError(f"{key}: private_key_jwt needs jwks_uri or jwks (one of them)")
    if c.jwks_uri is not None:
        problem = _server_url_problem(c.jwks_uri)
        if problem is not None:
            raise ConfigError(f"{key}.jwks_uri: {problem}")
    if c.jwks is not None:
        problem = _public_jwks_problem(c.jwks)
        if problem is not None:
            raise ConfigError(f"{key}.jwks: {problem}")


def _check_passkeys(config: Config) -> None:
    passkeys = config.passkeys
    for setting in ("registration_timeout_seconds", "authentication_timeout_seconds"):
        if not 30 <= getattr(passkeys, setting) <= 300:
            raise ConfigError(f"passkeys.{setting}: must be between 30 and 300")
    if passkeys.memory_max_challenges <= 0:
        raise ConfigError("passkeys.memory_max_challenges: must be positive")
    if not passkeys.rp_name.strip():
        raise ConfigError("passkeys.rp_name: must not be empty")
    rp_id = passkey_rp_id(config)
    if not rp_id or not re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", rp_id):
        raise ConfigError(f"passkeys.rp_id: {rp_id!r} is not a domain name")
    origins = passkey_origins(config)
    if not origins:
        raise ConfigError("passkeys.origins: at least one origin must be allowed")
    for o in origins:
        parts = urlsplit(o)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ConfigError(f"passkeys.origins: {o!r} is not an http(s) origin")
        host = parts.hostname.lower()
        if not (host == rp_id or host.endswith("." + rp_id)):
            raise ConfigError(
                f"passkeys.rp_id: {rp_id!r} does not cover the allowed origin {o} (its host "
                f"must be {rp_id} or end with .{rp_id}; set passkeys.rp_id or passkeys.origins)"
            )
