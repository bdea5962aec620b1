"""Verifying authgate's access tokens (RFC 9068 JWTs) at a resource server: an API or an MCP
server that accepts the tokens authgate issues to applications for it (docs/integration.md,
"Protecting an API or an MCP server").

The keys are authgate's published set, found through its OpenID Provider metadata
(``{issuer}/.well-known/openid-configuration``, ``jwks_uri``) and cached as the session
verifier caches them (:mod:`authgate.client.keys`). Verification is stateless unless an
:class:`~authgate.client.introspection.Introspection` also asks authgate whether each token is
still active (a revoked token is then refused at once).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp
from joserfc import jwt
from joserfc.errors import ExpiredTokenError, JoseError
from joserfc.jwk import Key, KeySet
from joserfc.jws import extract_compact

from ._http import HttpUser
from .introspection import Introspection
from .keys import ACCESS_TOKEN_KEY_TYPES, JwksCache, KeySetUnavailable, key_type
from .resource import ProtectedResource

log = logging.getLogger("authgate.client")

DISCOVERY_PATH = "/.well-known/openid-configuration"
MAX_DISCOVERY_BYTES = 64 * 1024
MAX_TOKEN_LENGTH = 8192
# RFC 9068 section 2.1: "at+jwt"; RFC 7515 section 4.1.9 lets "application/" be left out.
ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})
MIN_RSA_BITS = 2048


class InvalidToken(Exception):
    """The token is not a valid access token for this resource. ``reason`` is for the log;
    ``description`` is safe to send back (``error_description``)."""

    def __init__(self, reason: str, description: str = "the access token is not valid") -> None:
        super().__init__(reason)
        self.reason = reason
        self.description = description


class InsufficientScope(Exception):
    """The token is valid but lacks a required scope; ``required``: every scope required."""

    def __init__(self, required: frozenset[str]) -> None:
        super().__init__("missing scope: " + " ".join(sorted(required)))
        self.required = required


@dataclasses.dataclass(frozen=True)
class AccessToken:
    """A verified access token."""

    token: str
    """The token itself (to pass on, never to log)."""
    subject: str
    """``sub``: authgate's account id of the person the token acts for."""
    client_id: str
    """``client_id``: the application the token was issued to."""
    scopes: frozenset[str]
    """``scope``, split on spaces."""
    resource: str
    """The identifier of the resource the token was verified for (in its ``aud``)."""
    expires_at: dt.datetime
    """``exp`` (UTC)."""
    claims: Mapping[str, Any]
    """Every claim of the token."""

    def has_scopes(self, required: Iterable[str]) -> bool:
        """Whether the token carries every one of ``required``."""
        return set(required) <= self.scopes


class AccessTokenVerifier(HttpUser):
    """Verifies authgate's access tokens for ``resource``.

    A token is accepted when it is a compact JWS with ``typ: at+jwt``, signed ``RS256`` or
    ``ES256`` by a key of authgate's published set, whose ``iss`` is
    ``resource.authorization_server``, whose ``aud`` (a string or a list) holds
    ``resource.resource``, with ``sub``, ``client_id``, ``exp`` and ``iat``, and ``exp`` /
    ``iat`` / ``nbf`` within ``leeway_seconds`` of the local clock.

    ``jwks_url``: authgate's key set, when it is not to be found through the issuer's
    metadata (``{issuer}/.well-known/openid-configuration``); ``discovery_url``: that metadata
    elsewhere than under the issuer (authgate reached by another address than its public one).
    ``introspection``: also ask authgate whether each token is still active (and for this
    resource); :meth:`close` closes it too. ``cache_ttl_seconds``, ``min_refetch_seconds``:
    the key cache's (:mod:`authgate.client.keys`); ``http``: as
    :class:`~authgate.client._http.HttpUser`.
    """

    def __init__(
        self,
        resource: ProtectedResource,
        *,
        jwks_url: str | None = None,
        discovery_url: str | None = None,
        leeway_seconds: float = 30.0,
        cache_ttl_seconds: float = 300.0,
        min_refetch_seconds: float = 5.0,
        timeout_seconds: float = 5.0,
        http: aiohttp.ClientSession | None = None,
        introspection: Introspection | None = None,
    ) -> None:
        super().__init__(http)
        self.resource = resource
        self.issuer = resource.authorization_server
        self.introspection = introspection
        self._leeway = leeway_seconds
        self._discovery_url = discovery_url or self.issuer + DISCOVERY_PATH
        self._cache = {
            "max_age_seconds": cache_ttl_seconds,
            "min_refetch_seconds": min_refetch_seconds,
            "timeout_seconds": timeout_seconds,
        }
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._min_refetch = min_refetch_seconds
        self._keys: JwksCache | None = None if jwks_url is None else self._key_cache(jwks_url)
        self._discovery_lock = asyncio.Lock()
        self._discovery_failed_at: float | None = None

    def _key_cache(self, url: str) -> JwksCache:
        return JwksCache(
            url,
            self._client,
            key_types=ACCESS_TOKEN_KEY_TYPES,
            label="access token keys",
            **self._cache,
        )

    async def close(self) -> None:
        """Close the HTTP session the verifier created (not one passed in), and its
        introspection."""
        await super().close()
        if self.introspection is not None:
            await self.introspection.close()

    async def verify(self, token: str, required_scopes: Iterable[str] = ()) -> AccessToken:
        """The verified ``token``; raises :class:`InvalidToken`, :class:`InsufficientScope`
        when it lacks one of ``required_scopes``, :class:`KeySetUnavailable` when authgate's
        keys cannot be had at all and, with ``introspection``,
        :class:`~authgate.client.introspection.IntrospectionUnavailable` when authgate cannot
        say whether the token is active."""
        header = _header(token)
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ACCESS_TOKEN_KEY_TYPES.values():
            raise InvalidToken(f"algorithm {str(alg)[:20]!r} not accepted")
        typ = header.get("typ")
        if not isinstance(typ, str) or typ.lower() not in ACCESS_TOKEN_TYPES:
            raise InvalidToken(f"typ {str(typ)[:40]!r} is not at+jwt", "not an access token")
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("token without kid")
        if "crit" in header:
            raise InvalidToken("critical header parameters are not understood")
        key = await self._key(kid)
        if ACCESS_TOKEN_KEY_TYPES.get(key_type(key)) != alg:
            raise InvalidToken(f"key {kid[:80]!r} does not sign {alg}")
        try:
            decoded = jwt.decode(token, key, algorithms=[str(alg)])
        except (JoseError, ValueError, TypeError, KeyError) as e:
            raise InvalidToken(f"signature: {type(e).__name__}") from None
        verified = self._check_claims(token, decoded.claims)
        if self.introspection is not None:
            await self._introspect(verified)
        required = frozenset(required_scopes)
        if not verified.has_scopes(required):
            raise InsufficientScope(required)
        return verified

    async def _key(self, kid: str) -> Key:
        cache = await self._key_set()
        keys = await cache.get()
        key = _find(keys, kid)
        if key is None:  # authgate may have put a new key first since the last fetch
            keys = await cache.refresh(keys)
            key = _find(keys, kid)
        if key is None:
            raise InvalidToken(f"unknown key {kid[:80]!r}")
        if key.key_type == "RSA" and _rsa_bits(key) < MIN_RSA_BITS:
            raise InvalidToken(f"key {kid[:80]!r}: RSA key shorter than {MIN_RSA_BITS} bits")
        return key

    def _check_claims(self, token: str, claims: Mapping[str, Any]) -> AccessToken:
        now = time.time()
        try:
            jwt.JWTClaimsRegistry(
                now=int(now),
                leeway=int(self._leeway),
                iss={"essential": True, "value": self.issuer},
                sub={"essential": True},
                exp={"essential": True},
                iat={"essential": True},
            ).validate(dict(claims))
        except ExpiredTokenError:
            raise InvalidToken("expired", "the access token has expired") from None
        except (JoseError, ValueError, TypeError, KeyError) as e:
            raise InvalidToken(f"claims: {type(e).__name__}: {e}") from None
        exp, iat, client_id = claims["exp"], claims["iat"], claims.get("client_id")
        if isinstance(exp, bool) or not isinstance(exp, int):
            raise InvalidToken("exp must be an integer")
        if isinstance(iat, bool) or not isinstance(iat, int) or iat > now + self._leeway:
            raise InvalidToken("iat must be an integer, not in the future")
        if not isinstance(client_id, str) or not client_id:
            raise InvalidToken("token without client_id")
        if not self._for_this_resource(claims.get("aud")):
            raise InvalidToken(
                f"audience {str(claims.get('aud'))[:200]!r} is not {self.resource.resource!r}",
                "the access token is not for this resource",
            )
        scope = claims.get("scope", "")
        if not isinstance(scope, str):
            raise InvalidToken("scope is not a string")
        return AccessToken(
            token=token,
            subject=claims["sub"],
            client_id=client_id,
            scopes=frozenset(scope.split()),
            resource=self.resource.resource,
            expires_at=dt.datetime.fromtimestamp(exp, dt.UTC),
            claims=dict(claims),
        )

    def _for_this_resource(self, audience: Any) -> bool:
        """Whether ``audience`` (``aud``: a string or a list of strings) names this resource;
        a trailing slash aside, identifiers compare as exact strings."""
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list):
            return False
        own = self.resource.resource.rstrip("/")
        return any(isinstance(a, str) and a.rstrip("/") == own for a in audiences)

    async def _introspect(self, verified: AccessToken) -> None:
        assert self.introspection is not None
        remaining = verified.expires_at.timestamp() - time.time()
        answer = await self.introspection.answer(verified.token, remaining)
        if answer is None:
            raise InvalidToken(
                "the token is no longer active at authgate", "the access token is not active"
            )
        # Without "aud" (fail_open, nothing known) the token's own aud was checked already.
        if "aud" in answer and not self._for_this_resource(answer["aud"]):
            raise InvalidToken(
                "authgate describes the token as for another audience",
                "the access token is not for this resource",
            )

    async def _key_set(self) -> JwksCache:
        """The key cache, once authgate's metadata named its ``jwks_uri``; raises
        :class:`KeySetUnavailable` when the metadata cannot be had (again at most once per
        ``min_refetch_seconds``)."""
        if self._keys is not None:
            return self._keys
        async with self._discovery_lock:
            if self._keys is not None:
                return self._keys
            failed = self._discovery_failed_at
            if failed is not None and time.monotonic() - failed < self._min_refetch:
                raise KeySetUnavailable(f"metadata at {self._discovery_url}: failed recently")
            try:
                jwks_uri = await self._discover()
            except KeySetUnavailable:
                self._discovery_failed_at = time.monotonic()
                raise
            log.info("authgate's access token keys: %s", jwks_uri)
            self._keys = self._key_cache(jwks_uri)
            return self._keys

    async def _discover(self) -> str:
        url = self._discovery_url
        try:
            async with self._client().get(
                url, timeout=self._timeout, allow_redirects=False
            ) as response:
                if response.status != 200:
                    raise KeySetUnavailable(f"metadata at {url}: HTTP {response.status}")
                body = await response.content.read(MAX_DISCOVERY_BYTES + 1)
        except (aiohttp.ClientError, TimeoutError) as e:
            raise KeySetUnavailable(f"metadata at {url}: {type(e).__name__}: {e}") from None
        if len(body) > MAX_DISCOVERY_BYTES:
            raise KeySetUnavailable(f"metadata at {url}: answer too large")
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            raise KeySetUnavailable(f"metadata at {url}: not a JSON object")
        # OpenID Connect Discovery 1.0 section 4.3: the issuer it names must be the one asked.
        if document.get("issuer") != self.issuer:
            raise KeySetUnavailable(
                f"metadata at {url}: issuer {str(document.get('issuer'))[:200]!r} is not "
                f"{self.issuer!r}"
            )
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise KeySetUnavailable(f"metadata at {url}: no jwks_uri")
        return jwks_uri


def _header(token: str) -> Mapping[str, Any]:
    if len(token) > MAX_TOKEN_LENGTH:
        raise InvalidToken("token too long")
    if token.count(".") != 2:  # a JWS in compact form; never a JWE or a JSON serialisation
        raise InvalidToken("not a compact JWS", "not an access token")
    try:
        header: Mapping[str, Any] = extract_compact(token.encode("ascii")).protected
    except (JoseError, ValueError, TypeError, UnicodeError) as e:
        raise InvalidToken(f"malformed token: {type(e).__name__}") from None
    return header


def _find(keys: KeySet, kid: str) -> Key | None:
    for key in keys:
        if key.kid == kid:
            return key
    return None


def _rsa_bits(key: Key) -> int:
    bits: int = getattr(key.raw_value, "key_size", 0)
    return bits


__all__ = [
    "AccessToken",
    "AccessTokenVerifier",
    "InsufficientScope",
    "InvalidToken",
]
