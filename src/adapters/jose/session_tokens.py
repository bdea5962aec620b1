"""Session JWTs signed with the service's session keys (ES256 or EdDSA; the first signs,
every one verifies, chosen by ``kid``)."""

from __future__ import annotations

import base64
import collections
import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, KeySet, OKPKey

from authgate.adapters.jose.keys import ALGORITHMS, is_session_key, public_jwks
from authgate.domain.model import IssuedSession
from authgate.domain.scopes import SESSION_SCOPES
from authgate.domain.secrets import random_uuid_hex
from authgate.ports.session_tokens import InvalidSession, ResumedRequest, SessionClaims

LEEWAY_SECONDS = 30
VERIFIED_CACHE_SIZE = 4096
VERIFIED_CACHE_SECONDS = 60.0

# json.dumps(claims, ensure_ascii=False, separators=(",", ":")) without a JSONEncoder made per
# token (json.dumps makes one whenever an argument is not its default).
_CLAIMS_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _b64url(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


class CompactSigner:
    """Signs JWTs with one key as :func:`joserfc.jwt.encode` does, byte for byte, at a
    fraction of its cost (every sign-in signs one): the header is encoded once and the
    signature comes straight from the ``cryptography`` key."""

    _ES256 = ec.ECDSA(hashes.SHA256())

    def __init__(self, key: Key, algorithm: str) -> None:
        """:class:`ValueError` for a key this signer does not cover (joserfc signs then)."""
        private = key.private_key if isinstance(key, ECKey | OKPKey) else None
        if algorithm == "ES256" and isinstance(private, ec.EllipticCurvePrivateKey):
            if not isinstance(private.curve, ec.SECP256R1):
                raise ValueError("ES256 needs a P-256 key")
            self._ec: ec.EllipticCurvePrivateKey | None = private
            self._ed: ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey | None = None
        elif algorithm == "EdDSA" and isinstance(
            private, ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey
        ):
            self._ec, self._ed = None, private
        else:
            raise ValueError(f"no signer for this {algorithm} key")
        header = {"typ": "JWT", "alg": algorithm, "kid": key.kid}
        self._header = _b64url(json.dumps(header, separators=(",", ":")).encode()) + b"."

    def encode(self, claims: Mapping[str, Any]) -> str:
        payload = _CLAIMS_JSON(claims).encode()
        signing_input = self._header + _b64url(payload)
        return (signing_input + b"." + _b64url(self._sign(signing_input))).decode("ascii")

    def _sign(self, data: bytes) -> bytes:
        if self._ed is not None:
            return self._ed.sign(data)
        assert self._ec is not None
        r, s = decode_dss_signature(self._ec.sign(data, self._ES256))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")


class JwtSessionTokens:
    """Issues and verifies the ``session`` JWT. ``keys``: the service's whole key set, all
    published (:meth:`public_jwks`); its session keys (EC, OKP) sign and verify."""

    def __init__(self, keys: KeySet, *, issuer: str, audience: str, ttl: dt.timedelta) -> None:
        self._keys = KeySet([k for k in keys.keys if is_session_key(k)])
        self._signing = self._keys.keys[0]
        self._algorithm = ALGORITHMS[self._signing.key_type]
        self._signer: CompactSigner | None
        try:
            self._signer = CompactSigner(self._signing, self._algorithm)
        except ValueError:  # joserfc signs (and refuses) what the fast path does not cover
            self._signer = None
        self._issuer = issuer
        self._audience = audience
        self._ttl = ttl
        self._verified: collections.OrderedDict[bytes, tuple[SessionClaims, float]] = (
            collections.OrderedDict()
        )
        self._jwks = public_jwks(keys)

    @property
    def ttl(self) -> dt.timedelta:
        """The lifetime of a token (``session.ttl_seconds``)."""
        return self._ttl

    def issue(
        self,
        account_id: str,
        provider: str,
        now: dt.datetime,
        *,
        session_id: str | None = None,
        auth_time: dt.datetime | None = None,
        expires_at: dt.datetime | None = None,
        resumes: ResumedRequest | None = None,
    ) -> IssuedSession:
        issued = int(now.timestamp())
        expires = int((expires_at or self.expiry(now)).timestamp())
        sid = session_id or random_uuid_hex()
        claims = {
            "iss": self._issuer,
            "aud": self._audience,
            "sub": account_id,
            "iat": issued,
            "nbf": issued,
            "exp": expires,
            "jti": random_uuid_hex(),
            "sid": sid,
            "auth_time": int((auth_time or now).timestamp()),
            "scope": " ".join(SESSION_SCOPES),
            "provider": provider,
        }
        if resumes is not None:
            claims["resumes"] = resumes.key
            claims["signin_started_at"] = int(resumes.signin_started_at.timestamp())
        if self._signer is not None:
            token = self._signer.encode(claims)
        else:
            header = {"alg": self._algorithm, "kid": self._signing.kid, "typ": "JWT"}
            token = jwt.encode(header, claims, self._signing)
        return IssuedSession(token, dt.datetime.fromtimestamp(expires, dt.UTC), sid)

    def expiry(self, now: dt.datetime) -> dt.datetime:
        return dt.datetime.fromtimestamp(
            int(now.timestamp()) + int(self._ttl.total_seconds()), dt.UTC
        )

    def verify(self, token: str, now: dt.datetime) -> SessionClaims:
        """A token verified recently is answered from a bounded cache (the signature is the
        largest cost of an authenticated request, and a client presents the same token every
        time): an entry serves ``VERIFIED_CACHE_SECONDS`` at most and never past ``exp``, so it
        changes no verdict. Keyed by the token's SHA-256 (docs/benchmarks.md: memory)."""
        at = now.timestamp()
        key = hashlib.sha256(token.encode()).digest()
        cached = self._verified.get(key)
        if cached is not None:
            claims, until = cached
            if at < until:
                self._verified.move_to_end(key)
                return claims
            del self._verified[key]
        claims = self._verify(token, now)
        until = min(at + VERIFIED_CACHE_SECONDS, claims.expires_at.timestamp())
        self._verified[key] = (claims, until)
        if len(self._verified) > VERIFIED_CACHE_SIZE:
            self._verified.popitem(last=False)
        return claims

    def _verify(self, token: str, now: dt.datetime) -> SessionClaims:
        try:
            decoded = jwt.decode(token, self._keys, algorithms=list(ALGORITHMS.values()))
            registry = jwt.JWTClaimsRegistry(
                now=int(now.timestamp()),
                leeway=LEEWAY_SECONDS,
                iss={"essential": True, "value": self._issuer},
                aud={"essential": True, "value": self._audience},
                sub={"essential": True},
                exp={"essential": True},
                iat={"essential": True},
            )
            registry.validate(decoded.claims)
        except (JoseError, ValueError, TypeError, KeyError) as e:
            raise InvalidSession(f"{type(e).__name__}: {e}") from None
        claims = decoded.claims
        if decoded.header.get("kid") is None:
            raise InvalidSession("token without kid")
        iat = claims.get("iat")
        if not isinstance(iat, int) or iat > now.timestamp() + LEEWAY_SECONDS:
            raise InvalidSession("iat in the future")
        scope = claims.get("scope", "")
        provider = claims.get("provider")
        # A session's id is its sid; a token minted before sessions had ids is its own jti.
        sid = claims.get("sid", claims.get("jti"))
        if not isinstance(sid, str) or not sid:
            raise InvalidSession("token without a session id")
        auth_time = claims.get("auth_time", iat)
        if not isinstance(auth_time, int) or isinstance(auth_time, bool):
            raise InvalidSession("auth_time is not a number")
        resumes = claims.get("resumes")
        started = claims.get("signin_started_at")
        if (
            not isinstance(resumes, str)
            or not isinstance(started, int)
            or isinstance(started, bool)
        ):
            resumes, started = None, None
        return SessionClaims(
            account_id=str(claims["sub"]),
            provider=provider if isinstance(provider, str) else None,
            scopes=frozenset(scope.split()) if isinstance(scope, str) else frozenset(),
            expires_at=dt.datetime.fromtimestamp(int(claims["exp"]), dt.UTC),
            claims=claims,
            session_id=sid,
            issued_at=dt.datetime.fromtimestamp(iat, dt.UTC),
            auth_time=dt.datetime.fromtimestamp(auth_time, dt.UTC),
            resumes=resumes,
            signin_started_at=None
            if started is None
            else dt.datetime.fromtimestamp(started, dt.UTC),
        )

    def public_jwks(self) -> Mapping[str, Any]:
        return self._jwks
