"""Verification of an OpenID Connect ID token (OIDC Core 3.1.3.7).

The signature is checked first, with a key of the provider's key set chosen by ``kid`` and an
algorithm from the provider's allow-list; then the claims: ``iss`` exactly, ``aud`` containing
the client id and no other audience that is not trusted, ``azp``, ``exp``/``iat``/``nbf`` with a
small leeway, ``nonce``, ``sub``.
Every failure raises :class:`~authgate.ports.provider.VerificationFailed` with a log-safe text
(never the token). The signature is checked by joserfc, for event tokens too.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import Key, KeySet

from authgate.adapters.provider.jwks import KeySetCache, KeySetUnavailable, Lookup
from authgate.ports.clock import Clock
from authgate.ports.provider import ExchangeFailed, VerificationFailed

if TYPE_CHECKING:
    from authgate.adapters.provider.settings import ProviderSettings

log = logging.getLogger("authgate.identity")

MAX_TOKEN_LENGTH = 16 * 1024


class IdTokenVerifier:
    """Verifies ID tokens of one provider."""

    def __init__(
        self,
        *,
        keys: KeySetCache,
        clock: Clock,
        issuer: str,
        client_id: str,
        algorithms: Collection[str],
        additional_issuers: Collection[str] = (),
        trusted_audiences: Collection[str] = (),
        leeway_seconds: float = 60.0,
    ) -> None:
        self._keys = keys
        self._clock = clock
        self._issuers = frozenset({issuer, *additional_issuers})
        self._client_id = client_id
        self._trusted_audiences = frozenset(trusted_audiences)
        self._algorithms = frozenset(algorithms)
        self._leeway = leeway_seconds

    @classmethod
    def for_provider(
        cls, settings: ProviderSettings, keys: KeySetCache, clock: Clock
    ) -> IdTokenVerifier | None:
        """The verifier of a provider's ID tokens; None for a provider without an issuer
        (plain OAuth 2.0: it issues none)."""
        if settings.issuer is None:
            return None
        return cls(
            keys=keys,
            clock=clock,
            issuer=settings.issuer,
            client_id=settings.client_id,
            additional_issuers=settings.additional_issuers,
            trusted_audiences=settings.trusted_audiences,
            algorithms=settings.id_token_algorithms,
            leeway_seconds=settings.leeway_seconds,
        )

    async def verify(self, token: str, *, nonce: str | None) -> dict[str, Any]:
        """The verified claims of ``token``.

        Raises VerificationFailed for a token that does not verify, and ExchangeFailed when no
        key set could be loaded at all (an outage of the provider, not an attack).
        """
        header = header_of(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._algorithms:
            raise VerificationFailed(f"ID token algorithm {loggable(alg)} is not allowed")
        if "crit" in header or "b64" in header:
            raise VerificationFailed("ID token header has unsupported critical parameters")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise VerificationFailed("ID token kid is not a string")
        payload = await self._verified_payload(token, alg, kid)
        claims = json_object(payload)
        self._check_claims(claims, nonce)
        return claims

    async def _verified_payload(self, token: str, alg: str, kid: str | None) -> bytes:
        return await verified_payload(self._keys, token, alg, kid)

    def _check_claims(self, claims: Mapping[str, Any], nonce: str | None) -> None:
        iss = claims.get("iss")
        if not isinstance(iss, str) or iss not in self._issuers:
            raise VerificationFailed(f"ID token iss {loggable(iss)} is not the provider's issuer")
        audiences = audience_list(claims.get("aud"))
        if audiences is None:
            raise VerificationFailed("ID token aud is missing or malformed")
        if self._client_id not in audiences:
            raise VerificationFailed("ID token aud does not contain the client id")
        azp = claims.get("azp")
        if azp is not None and azp != self._client_id:
            raise VerificationFailed("ID token azp is not the client id")
        if azp is None and len(audiences) > 1:
            raise VerificationFailed("ID token has several audiences and no azp")
        # OIDC Core 3.1.3.7 step 3: a token also addressed to a party we do not trust is one
        # that party holds and may present as well; azp naming us does not make it ours alone.
        untrusted = [
            a for a in audiences if a != self._client_id and a not in self._trusted_audiences
        ]
        if untrusted:
            raise VerificationFailed(
                f"ID token aud names an untrusted audience {loggable(untrusted[0])}"
            )
        now = self._clock.now().timestamp()
        exp = _number(claims, "exp", required=True)
        iat = _number(claims, "iat", required=True)
        nbf = _number(claims, "nbf", required=False)
        assert exp is not None and iat is not None
        if exp <= now - self._leeway:
            raise VerificationFailed("ID token has expired")
        if iat > now + self._leeway:
            raise VerificationFailed("ID token iat is in the future")
        if nbf is not None and nbf > now + self._leeway:
            raise VerificationFailed("ID token is not valid yet (nbf)")
        if nonce is not None:
            got = claims.get("nonce")
            if not isinstance(got, str):
                raise VerificationFailed("ID token has no nonce")
            if not hmac.compare_digest(got.encode(), nonce.encode()):
                raise VerificationFailed("ID token nonce does not match the sign-in's")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub or len(sub) > 255:
            raise VerificationFailed("ID token sub is missing or malformed")


async def verified_payload(
    keys: KeySetCache,
    token: str,
    alg: str,
    kid: str | None,
    what: str = "ID token",
    *,
    wait: bool = True,
) -> bytes:
    """The payload of ``token`` once its signature verifies with a key of ``keys`` chosen by
    ``kid`` and ``alg``, fetching the key set again for an unknown ``kid`` or a failed
    signature (``wait``: see :class:`KeySetCache`). Shared by ID tokens and event tokens.

    Raises VerificationFailed when the token does not verify with the keys a fetch made for it
    found, and ExchangeFailed when they could not be looked at (no key set, or an unknown
    ``kid`` no fetch for this token has looked for yet: "retry later", not "bad token").
    """
    try:
        lookup = await keys.current(wait=wait)
    except KeySetUnavailable as e:
        raise ExchangeFailed(str(e)) from None
    key = pick_key(lookup.keys, alg, kid)
    if key is None:  # unknown kid: the provider may have rotated its keys
        key = await _rotated_key(keys, lookup, alg, kid, what, wait)
        return verify_signature(token, key, alg, what)
    try:
        return verify_signature(token, key, alg, what)
    except VerificationFailed:
        if lookup.fresh:
            raise
        # A key replaced under the same kid: look once more.
        fresh = await _refresh(keys, None, wait)
        fresh_key = pick_key(fresh.keys, alg, kid) if fresh.fresh else None
        if fresh_key is None or fresh_key.as_dict() == key.as_dict():
            raise
        return verify_signature(token, fresh_key, alg, what)


async def _rotated_key(
    keys: KeySetCache, lookup: Lookup, alg: str, kid: str | None, what: str, wait: bool
) -> Key:
    """The key named by a ``kid`` that ``lookup`` does not hold, from a key set fetched for it
    (unless ``lookup`` is one already)."""
    if not lookup.fresh:
        lookup = await _refresh(keys, kid, wait)
        key = pick_key(lookup.keys, alg, kid)
        if key is not None:
            return key
    # A fetch made for this very token proved it absent, or the kid names a key that is not
    # for this use or algorithm.
    if lookup.fresh or any(k.kid == kid for k in lookup.keys):
        raise VerificationFailed(f"no key in the provider's key set for kid {loggable(kid)}")
    raise ExchangeFailed(
        f"{what}: the provider's key set could not be refreshed for kid {loggable(kid)}"
    )


async def _refresh(keys: KeySetCache, kid: str | None, wait: bool) -> Lookup:
    try:
        return await keys.refresh(kid, wait=wait)
    except KeySetUnavailable as e:
        raise ExchangeFailed(str(e)) from None


def header_of(token: str, what: str = "ID token") -> dict[str, Any]:
    """The JOSE header of a compact JWS (VerificationFailed when it is not one)."""
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
        raise VerificationFailed(f"{what} is missing or too long")
    parts = token.split(".")
    if len(parts) != 3:
        raise VerificationFailed(f"{what} is not a compact JWS (three parts)")
    return json_object(_b64decode(parts[0], "header", what), what)


def _b64decode(segment: str, part: str, what: str = "ID token") -> bytes:
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise VerificationFailed(f"{what} {part} is not base64url") from None


def json_object(raw: bytes, what: str = "ID token") -> dict[str, Any]:
    """``raw`` as a JSON object (VerificationFailed otherwise)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise VerificationFailed(f"{what} part is not JSON") from None
    if not isinstance(value, dict):
        raise VerificationFailed(f"{what} part is not a JSON object")
    return value


def pick_key(keys: KeySet, alg: str, kid: str | None) -> Key | None:
    """The signature key of ``keys`` for ``alg`` named ``kid`` (the only one, when the token
    names none), or None."""
    key_types = KeySet.algorithm_keys.get(alg, [])
    usable = [
        key
        for key in keys
        if key.key_type in key_types
        and key.get("use") in (None, "sig")
        and key.get("alg") in (None, alg)
    ]
    if kid is None:  # only an unambiguous key set may omit the kid
        return usable[0] if len(usable) == 1 else None
    for key in usable:
        if key.kid == kid:
            return key
    return None


def verify_signature(token: str, key: Key, alg: str, what: str = "ID token") -> bytes:
    """The payload of ``token`` once its signature verifies with ``key`` and ``alg``
    (joserfc's verification of the compact JWS)."""
    try:
        obj = jws.deserialize_compact(token, key, algorithms=[alg])
    except JoseError as e:
        raise VerificationFailed(f"{what} signature does not verify ({e.error})") from None
    except (ValueError, TypeError):
        raise VerificationFailed(f"{what} signature does not verify") from None
    assert obj.payload is not None
    return obj.payload


def _number(claims: Mapping[str, Any], name: str, *, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise VerificationFailed(f"ID token has no {name}")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise VerificationFailed(f"ID token {name} is not a number")
    return float(value)


def audience_list(aud: Any) -> list[str] | None:
    """The ``aud`` claim as a list of audiences: one string or a non-empty list of strings;
    None when it is anything else."""
    audiences = [aud] if isinstance(aud, str) else aud
    if (
        not isinstance(audiences, list)
        or not audiences
        or not all(isinstance(a, str) for a in audiences)
    ):
        return None
    return audiences


def loggable(value: object) -> str:
    """A claim or header value for a log line: quoted, bounded."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
