"""The applications registered with authgate as their OpenID Provider (``clients:``): they
come from the configuration and never change while the service runs."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

import attrs

from authgate.domain.openid.records import CODE_MAX_LIFETIME
from authgate.domain.redirects import origin

ClientType = Literal["confidential", "public"]
# Where a client's registration comes from: the configuration file, a dynamic registration
# kept in the database (RFC 7591), or a client ID metadata document fetched from its
# client_id URL.
ClientOrigin = Literal["configuration", "registration", "metadata_document"]
AuthMethod = Literal["client_secret_basic", "client_secret_post", "private_key_jwt", "none"]
IdTokenAlgorithm = Literal["RS256", "ES256"]

AUTH_METHODS: tuple[AuthMethod, ...] = get_args(AuthMethod)
SECRET_METHODS: tuple[AuthMethod, ...] = ("client_secret_basic", "client_secret_post")
ID_TOKEN_ALGORITHMS: tuple[IdTokenAlgorithm, ...] = get_args(IdTokenAlgorithm)
# What a private_key_jwt client may sign its assertions with: asymmetric algorithms only
# (never none, never an HMAC, which would make a public key a shared secret).
ASSERTION_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
SUPPORTED_SCOPES = ("openid", "profile", "email", "offline_access")
AUTHORIZATION_CODE_GRANT = "authorization_code"
REFRESH_TOKEN_GRANT = "refresh_token"  # noqa: S105 - a grant type
CLIENT_CREDENTIALS_GRANT = "client_credentials"
DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# What a client may use unless its registration says otherwise: the code flow and its
# refresh tokens, as before grant types were declared.
DEFAULT_GRANT_TYPES = frozenset({AUTHORIZATION_CODE_GRANT, REFRESH_TOKEN_GRANT})
GRANT_TYPES = (
    AUTHORIZATION_CODE_GRANT,
    REFRESH_TOKEN_GRANT,
    CLIENT_CREDENTIALS_GRANT,
    DEVICE_CODE_GRANT,
)
# The grants that need no browser redirect back to the client.
_WITHOUT_REDIRECT = frozenset({CLIENT_CREDENTIALS_GRANT, DEVICE_CODE_GRANT, REFRESH_TOKEN_GRANT})
MAX_RESOURCE_LENGTH = 2048
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749 section 3.3
MAX_CODE_LIFETIME = CODE_MAX_LIFETIME
# A client secret is a long random value, not a password (see SecretDigest).
MIN_SECRET_LENGTH = 32
# RFC 8252 section 7.3: a native app's (a public client's) loopback redirect may use any port.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "[::1]", "localhost"})
# RFC 8252 section 7.1: a private-use scheme is a reverse domain name (com.example.app).
_PRIVATE_SCHEME = re.compile(r"[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+")


@attrs.frozen(repr=False)
class SecretDigest:
    """A client secret as kept in memory: a random salt and SHA-256 of salt and secret.

    A fast digest, not a password hash: a client presents its secret at every token request,
    and a secret of :data:`MIN_SECRET_LENGTH` random characters is beyond guessing whatever
    the digest costs. The salt keeps equal secrets from showing as equal digests in a memory
    dump."""

    salt: bytes
    digest: bytes

    @classmethod
    def of(cls, secret: str) -> SecretDigest:
        salt = os.urandom(16)
        return cls(salt, _digest(salt, secret))

    def matches(self, presented: str) -> bool:
        """Whether ``presented`` is the secret, compared in constant time."""
        return hmac.compare_digest(_digest(self.salt, presented), self.digest)

    def __repr__(self) -> str:
        return "SecretDigest(…)"


def _digest(salt: bytes, secret: str) -> bytes:
    return hashlib.sha256(salt + secret.encode("utf-8", "surrogatepass")).digest()


@attrs.frozen
class Client:
    """A registered application (OpenID Connect Dynamic Registration's metadata names)."""

    client_id: str
    name: str
    client_type: ClientType
    token_endpoint_auth_method: AuthMethod
    redirect_uris: tuple[str, ...]
    secrets: tuple[SecretDigest, ...] = ()
    # private_key_jwt: the client's public keys, where published or as JWK Set JSON.
    jwks_uri: str | None = None
    jwks: str | None = None
    post_logout_redirect_uris: tuple[str, ...] = ()
    backchannel_logout_uri: str | None = None
    allowed_scopes: frozenset[str] = frozenset(SUPPORTED_SCOPES)
    first_party: bool = False  # no consent screen: an application of authgate's own party
    access_token_lifetime: dt.timedelta = dt.timedelta(seconds=300)
    id_token_lifetime: dt.timedelta = dt.timedelta(seconds=300)
    refresh_token_lifetime: dt.timedelta = dt.timedelta(days=30)
    code_lifetime: dt.timedelta = MAX_CODE_LIFETIME
    id_token_signed_response_alg: IdTokenAlgorithm = "RS256"  # noqa: S105 - an algorithm
    introspection: bool = False  # may call the introspection endpoint (RFC 7662)
    # The browser origins that may call the token, userinfo and revocation endpoints (CORS).
    allowed_origins: frozenset[str] = frozenset()
    # The grant types the client may use at the token endpoint (RFC 7591 ``grant_types``);
    # without authorization_code it has no business at the authorization endpoint either.
    grant_types: frozenset[str] = DEFAULT_GRANT_TYPES
    # The resource servers (RFC 8707 resource indicators, absolute URIs) its access tokens
    # may be issued for; a request naming another is refused with invalid_target.
    resources: frozenset[str] = frozenset()
    logo_uri: str | None = None
    client_uri: str | None = None
    origin: ClientOrigin = "configuration"

    @property
    def is_public(self) -> bool:
        """A client that cannot keep a secret (a browser or native app)."""
        return self.client_type == "public"

    def secret_matches(self, presented: str) -> bool:
        """Whether ``presented`` is one of the client's secrets (rotation keeps several).
        Every secret is compared, so the time taken does not tell which one matched."""
        matched = False
        for secret in self.secrets:
            matched |= secret.matches(presented)
        return matched

    def redirect_uri_registered(self, uri: str) -> bool:
        """Whether ``uri`` is a registered redirect URI: the same string exactly (RFC 9700
        section 4.1.3), but for a public client's loopback one on any port (RFC 8252 section
        7.3: a native app listens where the system lets it). A confidential client's match
        exactly, so that another program on its machine cannot take its codes on another
        port."""
        if uri in self.redirect_uris:
            return True
        if not self.is_public:
            return False
        presented = _loopback_without_port(uri)
        return presented is not None and any(
            _loopback_without_port(registered) == presented for registered in self.redirect_uris
        )

    def post_logout_redirect_uri_registered(self, uri: str) -> bool:
        """Whether ``uri`` is a registered post-logout redirect URI, exactly."""
        return uri in self.post_logout_redirect_uris


def _loopback_without_port(uri: str) -> tuple[str, str, str, str] | None:
    """(host, path, query, fragment) of an http loopback URI, as written; None for any
    other URI."""
    if not uri.startswith("http://"):
        return None
    parts = urlsplit(uri)
    netloc = parts.netloc
    if netloc.startswith("["):
        end = netloc.find("]") + 1
        host, rest = netloc[:end], netloc[end:]
        if end == 0 or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    else:
        host, _, port = netloc.partition(":")
    if host not in LOOPBACK_HOSTS or (port and not (port.isdigit() and 0 < int(port) < 65536)):
        return None
    return (host, parts.path, parts.query, parts.fragment)


def redirect_uri_problem(uri: str, *, native: bool) -> str | None:
    """Why ``uri`` cannot be registered as a redirect URI, or None when it can: https; http
    only on loopback (RFC 8252 section 7.3); a private-use scheme only when ``native`` (RFC
    8252 section 7.1); never a fragment (RFC 6749 section 3.1.2), user-info or white space."""
    if not uri or any(c.isspace() or not c.isprintable() for c in uri):
        return "must be a URI without white space"
    if "#" in uri:
        return "must not have a fragment"
    parts = urlsplit(uri)
    scheme = parts.scheme
    if scheme == "https":
        if not parts.hostname or "@" in parts.netloc:
            return "must name a host (and no user name)"
        try:
            parts.port  # noqa: B018 - urlsplit checks the port only when asked
        except ValueError:
            return "has an invalid port"
    elif scheme == "http":
        if _loopback_without_port(uri) is None or "@" in parts.netloc:
            return "http is only for loopback (127.0.0.1, [::1] or localhost); use https"
    elif _PRIVATE_SCHEME.fullmatch(scheme):
        if not native:
            return (
                "a private-use scheme is for the native apps of public clients; "
                "a confidential client redirects to https"
            )
    else:
        return (
            "must be https, http on loopback, or a private-use scheme of a native app "
            "(a reverse domain name such as com.example.app:/callback)"
        )
    return None


def resource_problem(uri: str) -> str | None:
    """Why ``uri`` cannot be a resource indicator, or None when it can: an absolute URI
    without a fragment (RFC 8707 section 2), of reasonable length, without white space."""
    if not uri or len(uri) > MAX_RESOURCE_LENGTH:
        return f"must be an absolute URI of at most {MAX_RESOURCE_LENGTH} characters"
    if any(c.isspace() or not c.isprintable() for c in uri):
        return "must be a URI without white space"
    if "#" in uri:
        return "must not have a fragment"
    parts = urlsplit(uri)
    if not parts.scheme or not (parts.netloc or parts.path):
        return "must be an absolute URI (with a scheme, such as https://api.example.com)"
    return None


def grant_types_problem(grant_types: Iterable[str], client_type: ClientType) -> str | None:
    """Why a client of ``client_type`` cannot have ``grant_types``, or None when it can: known
    grant types only, at least one, client credentials only for a confidential client (a
    public one cannot authenticate, so anyone could ask as it), a refresh token only beside
    a grant that issues one."""
    types = set(grant_types)
    unknown = sorted(types.difference(GRANT_TYPES))
    if unknown:
        return f"{unknown[0]!r} is not a grant type of the provider ({', '.join(GRANT_TYPES)})"
    if not types or types == {REFRESH_TOKEN_GRANT}:
        return "needs authorization_code, client_credentials or the device code grant"
    if CLIENT_CREDENTIALS_GRANT in types and client_type == "public":
        return "client_credentials is for confidential clients (a public one cannot authenticate)"
    return None


def needs_redirect_uris(grant_types: Iterable[str]) -> bool:
    """Whether a client with ``grant_types`` redirects a browser back (the code flow)."""
    return not _WITHOUT_REDIRECT.issuperset(grant_types)


def public_jwks_problem(jwks: Mapping[str, Any]) -> str | None:
    """Why ``jwks`` is not a set of public signature keys by its shape, or None (a key that
    cannot be read fails the client's assertions)."""
    keys = jwks.get("keys")
    if not isinstance(keys, list) or not keys:
        return "must be a JWK Set ({keys: [...]}) with at least one key"
    for jwk in keys:
        if not isinstance(jwk, dict) or jwk.get("kty") not in ("RSA", "EC", "OKP"):
            return "every key must be an RSA, EC or OKP public key"
        if any(member in jwk for member in ("d", "p", "q")):
            return "must hold public keys only (a private member is there)"
        if jwk.get("use", "sig") != "sig":
            return "every key must be a signature key (use: sig)"
    return None


def origins_of(uris: Iterable[str]) -> frozenset[str]:
    """The browser origins of the http(s) URIs among ``uris``; a private-use scheme has none."""
    web = (urlsplit(uri) for uri in uris)
    return frozenset(
        origin(p.geturl()) for p in web if p.scheme.lower() in ("http", "https") and p.netloc
    )


class ClientRegistry:
    """The registered clients, by ``client_id``."""

    def __init__(self, clients: Iterable[Client] = ()) -> None:
        self._clients: dict[str, Client] = {}
        for client in clients:
            if client.client_id in self._clients:
                raise ValueError(f"client {client.client_id!r} is registered twice")
            self._clients[client.client_id] = client

    def get(self, client_id: str) -> Client | None:
        return self._clients.get(client_id)

    def __contains__(self, client_id: object) -> bool:
        return client_id in self._clients

    def __iter__(self) -> Iterator[Client]:
        return iter(self._clients.values())

    def __len__(self) -> int:
        return len(self._clients)
