"""The OpenID Provider's tokens, signed and verified with the service's key set (joserfc).

RS256 with the first RSA key for ID tokens by default, access tokens (RFC 9068) and logout
tokens; ES256 with the first P-256 key for the ID tokens of clients that register it. Every
header names its key's ``kid`` and the token's ``typ``, which keeps one kind of token from
passing for another when presented back. The RS256 signature is the bulk of the cost, so
joserfc signs (unlike the session tokens' ES256, which has a signer of its own).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from collections.abc import Collection, Mapping
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, KeySet, RSAKey

from authgate.domain.openid.clients import ID_TOKEN_ALGORITHMS, IdTokenAlgorithm
from authgate.ports.jose import InvalidToken, VerifiedIdToken

MAX_TOKEN_LENGTH = 16 * 1024
LEEWAY_SECONDS = 30
TYP_ID = "JWT"
TYP_ACCESS = "at+jwt"  # RFC 9068 section 2.1
TYP_LOGOUT = "logout+jwt"  # OpenID Connect Back-Channel Logout 1.0 section 2.4


class JwtTokenSigner:
    """:class:`~authgate.ports.jose.TokenSigner` on the service's key set."""

    def __init__(self, keys: KeySet, *, issuer: str) -> None:
        """:class:`ValueError` when ``keys`` holds no RSA key (RS256 is every provider's ID
        token algorithm, OIDC Core 15.1, and the access tokens')."""
        rsa: list[Key] = [k for k in keys.keys if isinstance(k, RSAKey)]
        if not rsa:
            raise ValueError("the key set holds no RSA key for ID and access tokens")
        p256: list[Key] = [k for k in keys.keys if isinstance(k, ECKey) and k.curve_name == "P-256"]
        self._issuer = issuer
        self._signing: dict[str, Key] = {"RS256": rsa[0]}
        if p256:
            self._signing["ES256"] = p256[0]
        self._id_token_keys = KeySet([*rsa, *p256])
        self._rsa_keys = KeySet(rsa)

    @property
    def issuer(self) -> str:
        return self._issuer

    def supports(self, algorithm: IdTokenAlgorithm) -> bool:
        return algorithm in self._signing

    def id_token(
        self,
        claims: Mapping[str, Any],
        *,
        algorithm: IdTokenAlgorithm = "RS256",
        access_token: str | None = None,
    ) -> str:
        payload = self._stamped(claims)
        if access_token is not None:
            payload["at_hash"] = left_half_hash(access_token)
        return self._sign(payload, algorithm, TYP_ID)

    def access_token(self, claims: Mapping[str, Any]) -> str:
        return self._sign(self._stamped(claims), "RS256", TYP_ACCESS)

    def logout_token(self, claims: Mapping[str, Any]) -> str:
        return self._sign(self._stamped(claims), "RS256", TYP_LOGOUT)

    def verify_id_token(self, token: str) -> VerifiedIdToken:
        claims = self._verified(token, self._id_token_keys, ID_TOKEN_ALGORITHMS, TYP_ID)
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise InvalidToken("ID token without a sub")
        audience = claims.get("aud")
        audiences = (audience,) if isinstance(audience, str) else audience
        if (
            not isinstance(audiences, list | tuple)
            or not audiences
            or not all(isinstance(a, str) and a for a in audiences)
        ):
            raise InvalidToken("ID token without an aud")
        sid = claims.get("sid")
        if sid is not None and not isinstance(sid, str):
            raise InvalidToken("ID token sid is not a string")
        auth_time = claims.get("auth_time")
        return VerifiedIdToken(
            subject=subject,
            audiences=tuple(audiences),
            issued_at=_time(claims, "iat"),
            expires_at=_time(claims, "exp"),
            session_id=sid,
            auth_time=_time(claims, "auth_time") if auth_time is not None else None,
            claims=claims,
        )

    def verify_access_token(self, token: str, now: dt.datetime) -> Mapping[str, Any]:
        claims = self._verified(token, self._rsa_keys, ("RS256",), TYP_ACCESS)
        at = now.timestamp()
        if _seconds(claims, "exp") <= at:
            raise InvalidToken("access token expired")
        if _seconds(claims, "iat") > at + LEEWAY_SECONDS:
            raise InvalidToken("access token issued in the future")
        for name in ("sub", "client_id", "jti"):
            if not isinstance(claims.get(name), str) or not claims[name]:
                raise InvalidToken(f"access token without a {name}")
        return claims

    def _stamped(self, claims: Mapping[str, Any]) -> dict[str, Any]:
        if "iss" in claims:
            raise ValueError("the signer stamps iss itself")
        return {"iss": self._issuer, **claims}

    def _sign(self, claims: dict[str, Any], algorithm: str, typ: str) -> str:
        key = self._signing.get(algorithm)
        if key is None:
            raise ValueError(f"the key set holds no key for {algorithm}")
        header = {"alg": algorithm, "kid": key.kid, "typ": typ}
        return jwt.encode(header, claims, key, algorithms=[algorithm])

    def _verified(
        self, token: str, keys: KeySet, algorithms: Collection[str], typ: str
    ) -> dict[str, Any]:
        what = "access token" if typ == TYP_ACCESS else "ID token"
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
            raise InvalidToken(f"{what} missing or too long")
        try:
            decoded = jwt.decode(token, keys, algorithms=list(algorithms))
        except (JoseError, ValueError, TypeError, KeyError) as e:
            raise InvalidToken(f"{what} does not verify ({type(e).__name__})") from None
        header = decoded.header
        if not isinstance(header.get("kid"), str):
            raise InvalidToken(f"{what} without a kid")
        if not _is_type(header.get("typ"), typ):
            raise InvalidToken(f"{what} of another type ({str(header.get('typ'))[:40]!r})")
        claims = decoded.claims
        if claims.get("iss") != self._issuer:
            raise InvalidToken(f"{what} of another issuer")
        return claims


def left_half_hash(value: str) -> str:
    """``at_hash``: base64url of the left half of the SHA-256 of ``value`` (RS256 and ES256
    both hash with SHA-256)."""
    digest = hashlib.sha256(value.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode("ascii")


def _is_type(given: Any, expected: str) -> bool:
    """Whether a ``typ`` header names ``expected``: compared without case and with an
    ``application/`` prefix allowed (RFC 7515 section 4.1.9); an ID token may omit it."""
    if given is None:
        return expected == TYP_ID
    if not isinstance(given, str):
        return False
    return given.lower().removeprefix("application/") == expected.lower()


# The instants a datetime holds (year 1 to 9999), in seconds since the epoch.
_EARLIEST = dt.datetime.min.replace(tzinfo=dt.UTC).timestamp() + 86400
_LATEST = dt.datetime.max.replace(tzinfo=dt.UTC).timestamp() - 86400


def _seconds(claims: Mapping[str, Any], name: str) -> int | float:
    """A time claim (seconds since the epoch) that is a number and a date."""
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken(f"token {name} is missing or not a number")
    if not _EARLIEST <= value < _LATEST:
        raise InvalidToken(f"token {name} is out of range")
    return value


def _time(claims: Mapping[str, Any], name: str) -> dt.datetime:
    return dt.datetime.fromtimestamp(_seconds(claims, name), dt.UTC)
