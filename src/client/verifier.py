"""Verifying authgate's session token in another service.

The token is a JWT that authgate signs with its own keys (ES256 on P-256, or EdDSA on Ed25519,
with a ``kid``) and publishes the public halves of at ``GET /.well-known/jwks.json``.
Verification is stateless: a token keeps verifying until it expires, whatever authgate has done
since, unless the verifier has an :class:`~authgate.client.introspection.Introspection` to ask
authgate too (docs/integration.md).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact

from ._http import HttpUser
from .introspection import Introspection
from .keys import KEY_TYPES, JwksCache, KeySetUnavailable

# The algorithms authgate signs sessions with; "none", HS* (a public key used as an HMAC secret)
# and anything else are refused before any key is touched.
ALGORITHMS = frozenset(KEY_TYPES.values())
JWKS_PATH = "/.well-known/jwks.json"
MAX_TOKEN_LENGTH = 8192


class InvalidSession(Exception):
    """The token is not a valid authgate session: malformed, badly signed, expired, for another
    issuer or audience... ``reason`` says which; it is for logs, not for the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class Session:
    """A verified session."""

    account_id: str
    """The ``sub`` claim: authgate's account id."""
    scopes: frozenset[str]
    """The ``scope`` claim, split on spaces."""
    provider: str | None
    """The ``provider`` claim: the identity provider of the sign-in."""
    expires_at: dt.datetime
    """The ``exp`` claim (UTC)."""
    claims: Mapping[str, Any]
    """Every claim of the token."""

    def has_scopes(self, required: Iterable[str]) -> bool:
        """Whether the session carries every one of ``required``."""
        return set(required) <= self.scopes


class SessionVerifier(HttpUser):
    """Verifies authgate session tokens against authgate's published keys.

    ``jwks_url``: authgate's ``/.well-known/jwks.json`` (or use :meth:`for_service` with its
    base URL). ``issuer`` and ``audience``: authgate's ``session.issuer`` and
    ``session.audience``. ``leeway_seconds``: tolerated clock skew for ``exp``, ``nbf`` and
    ``iat``; ``cache_ttl_seconds`` (the key cache's ``max_age_seconds``) and
    ``min_refetch_seconds``: see :mod:`authgate.client.keys`. ``http``: as
    :class:`~authgate.client._http.HttpUser`. ``introspection``: also ask authgate whether
    each verified token's session is still live; :meth:`close` closes it too.
    """

    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str,
        audience: str,
        leeway_seconds: float = 30.0,
        cache_ttl_seconds: float = 300.0,
        min_refetch_seconds: float = 5.0,
        timeout_seconds: float = 5.0,
        http: aiohttp.ClientSession | None = None,
        introspection: Introspection | None = None,
    ) -> None:
        if not issuer or not audience:
            raise ValueError("issuer and audience must not be empty")
        self.issuer = issuer
        self.audience = audience
        self._leeway = leeway_seconds
        super().__init__(http)
        self.introspection = introspection
        self.keys = JwksCache(
            jwks_url,
            self._client,
            max_age_seconds=cache_ttl_seconds,
            min_refetch_seconds=min_refetch_seconds,
            timeout_seconds=timeout_seconds,
        )

    @classmethod
    def for_service(cls, base_url: str, **kwargs: Any) -> SessionVerifier:
        """A verifier for the authgate at ``base_url`` (its keys at ``/.well-known/jwks.json``)."""
        return cls(base_url.rstrip("/") + JWKS_PATH, **kwargs)

    async def close(self) -> None:
        """Close the HTTP session the verifier created (not one passed in), and its
        introspection."""
        await super().close()
        if self.introspection is not None:
            await self.introspection.close()

    async def verify(self, token: str) -> Session:
        """The session ``token`` proves; raises :class:`InvalidSession` (with its ``reason``),
        :class:`KeySetUnavailable` when authgate's keys cannot be had at all, and, with
        ``introspection``, :class:`~authgate.client.introspection.IntrospectionUnavailable`
        when authgate cannot say whether the session is live."""
        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidSession("token too long")
        if token.count(".") != 2:  # a JWS in compact form; never a JWE or a JSON serialisation
            raise InvalidSession("not a compact JWS")
        try:
            header = extract_compact(token.encode("ascii")).protected
        except (JoseError, ValueError, TypeError, UnicodeError) as e:
            raise InvalidSession(f"malformed token: {type(e).__name__}") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGORITHMS:
            raise InvalidSession(f"algorithm {str(alg)[:20]!r} not accepted")
        if not isinstance(kid, str) or not kid:
            raise InvalidSession("token without kid")
        if "crit" in header:
            raise InvalidSession("critical header parameters are not understood")
        keys = await self.keys.get()
        key = _find(keys, kid)
        if key is None:  # authgate may have put a new key first since the last fetch
            keys = await self.keys.refresh(keys)
            key = _find(keys, kid)
        if key is None:
            raise InvalidSession(f"unknown key {kid[:80]!r}")
        if KEY_TYPES.get((key.key_type, key.get("crv"))) != alg:
            raise InvalidSession(f"key {kid[:80]!r} does not sign {alg}")
        try:
            decoded = jwt.decode(token, key, algorithms=[alg])
        except (JoseError, ValueError, TypeError, KeyError) as e:
            raise InvalidSession(f"signature: {type(e).__name__}") from None
        session = self._check_claims(decoded.claims)
        if self.introspection is not None:
            remaining = session.expires_at.timestamp() - time.time()
            if not await self.introspection.active(token, remaining):
                raise InvalidSession("the session is no longer active at authgate")
        return session

    def _check_claims(self, claims: Mapping[str, Any]) -> Session:
        now = time.time()
        try:
            jwt.JWTClaimsRegistry(
                now=int(now),
                leeway=int(self._leeway),
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": self.audience},
                sub={"essential": True},
                exp={"essential": True},
                iat={"essential": True},
            ).validate(dict(claims))
        except (JoseError, ValueError, TypeError, KeyError) as e:
            raise InvalidSession(f"claims: {type(e).__name__}: {e}") from None
        # The registry has checked that sub is a non-empty string.
        sub, exp, iat = claims["sub"], claims["exp"], claims["iat"]
        if not isinstance(exp, int) or not isinstance(iat, int):
            raise InvalidSession("exp and iat must be integers")
        if iat > now + self._leeway:
            raise InvalidSession("iat in the future")
        scope = claims.get("scope", "")
        if not isinstance(scope, str):
            raise InvalidSession("scope is not a string")
        provider = claims.get("provider")
        return Session(
            account_id=sub,
            scopes=frozenset(scope.split()),
            provider=provider if isinstance(provider, str) else None,
            expires_at=dt.datetime.fromtimestamp(exp, dt.UTC),
            claims=dict(claims),
        )


def _find(keys: KeySet, kid: str) -> Any:
    for key in keys:
        if key.kid == kid:
            return key
    return None


__all__ = ["InvalidSession", "KeySetUnavailable", "Session", "SessionVerifier"]
