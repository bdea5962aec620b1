"""Verification of the signed event tokens providers push: OpenID Connect logout tokens, Sign
in with Apple notifications and Security Event Tokens (RFC 8417).

The signature (an allowed public-key algorithm, on the events' key-set cache), then ``iss``
exactly, ``aud`` as for ID tokens (OIDC Core 3.1.3.7 step 3, applied to logout tokens by
Back-Channel Logout 1.0 section 2.6), ``iat`` neither in the future nor older than ``max_age``,
``exp`` where required, ``jti``, and the JOSE ``typ`` when given. A failure raises
:class:`~authgate.ports.provider_events.EventTokenRejected` with its RFC 8935 code; a key that
could not be looked up raises ``EventTokenUnavailable`` (the provider retries: RFC 8935 makes
a 400 final). Texts are log-safe (never the token).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Any

import attrs

from authgate.adapters.jose.key_sets import (
    KeySetCache,
    header_of,
    json_object,
    loggable,
    verified_payload,
)
from authgate.adapters.provider.id_token import audience_list
from authgate.domain.model import EventId
from authgate.ports.clock import Clock
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from authgate.ports.provider_events import (
    INVALID_AUDIENCE,
    INVALID_ISSUER,
    INVALID_KEY,
    INVALID_REQUEST,
    EventTokenRejected,
    EventTokenUnavailable,
    VerifiedEventToken,
)

MAX_JTI_LENGTH = 255

# The JOSE "typ" each shape may carry (compared case-insensitively, "application/" optional,
# RFC 7515 4.1.9); absent is accepted for all.
LOGOUT_TYPES = frozenset({"jwt", "logout+jwt"})  # Back-Channel Logout 1.0 section 2.4
SECEVENT_TYPES = frozenset({"jwt", "secevent+jwt"})  # RFC 8417 section 2.3
APPLE_TYPES = frozenset({"jwt"})


def _frozen(values: Collection[str]) -> frozenset[str]:
    return frozenset(values)


@attrs.frozen(kw_only=True)
class EventTokenVerifierAdapter:
    """:class:`~authgate.ports.provider_events.EventTokenVerifier` for one provider."""

    keys: KeySetCache
    """The key set the tokens are verified with (``authgate config check`` fetches it)."""
    _clock: Clock
    _issuers: frozenset[str] = attrs.field(converter=_frozen)
    _audiences: frozenset[str] = attrs.field(converter=_frozen)
    _algorithms: frozenset[str] = attrs.field(converter=_frozen)
    _trusted_audiences: frozenset[str] = attrs.field(converter=_frozen, default=())
    _require_exp: bool = False
    _types: frozenset[str] = attrs.field(converter=_frozen)
    _max_age_seconds: float
    _leeway_seconds: float = 60.0
    _what: str = "event token"

    async def verify(self, token: str) -> VerifiedEventToken:
        try:
            header = header_of(token, self._what)
        except VerificationFailed as e:
            raise EventTokenRejected(INVALID_REQUEST, str(e)) from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._algorithms:
            raise EventTokenRejected(
                INVALID_KEY, f"{self._what} algorithm {loggable(alg)} is not allowed"
            )
        if "crit" in header or "b64" in header:
            raise EventTokenRejected(INVALID_REQUEST, f"{self._what} has critical parameters")
        typ = header.get("typ")
        if typ is not None and (
            not isinstance(typ, str) or typ.lower().removeprefix("application/") not in self._types
        ):
            raise EventTokenRejected(INVALID_REQUEST, f"{self._what} typ {loggable(typ)}")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise EventTokenRejected(INVALID_REQUEST, f"{self._what} kid is not a string")
        try:
            payload = await verified_payload(self.keys, token, alg, kid, self._what, wait=False)
            claims = json_object(payload, self._what)
        except VerificationFailed as e:
            raise EventTokenRejected(INVALID_KEY, str(e)) from None
        except ExchangeFailed as e:
            raise EventTokenUnavailable(str(e)) from None
        return VerifiedEventToken(claims, self._check(claims))

    def _check(self, claims: dict[str, Any]) -> EventId:
        what = self._what
        iss = claims.get("iss")
        if not isinstance(iss, str) or iss not in self._issuers:
            raise EventTokenRejected(INVALID_ISSUER, f"{what} iss {loggable(iss)} is not expected")
        audiences = audience_list(claims.get("aud"))
        if audiences is None:
            raise EventTokenRejected(INVALID_AUDIENCE, f"{what} aud is missing or malformed")
        if not self._audiences.intersection(audiences):
            raise EventTokenRejected(INVALID_AUDIENCE, f"{what} aud does not name us")
        # As for ID tokens: a token also addressed to a party we do not trust is one that party
        # holds and may replay to us.
        untrusted = [
            a for a in audiences if a not in self._audiences and a not in self._trusted_audiences
        ]
        if untrusted:
            raise EventTokenRejected(
                INVALID_AUDIENCE, f"{what} aud names an untrusted audience {loggable(untrusted[0])}"
            )
        now = self._clock.now().timestamp()
        iat = _number(claims.get("iat"))
        if iat is None:
            raise EventTokenRejected(INVALID_REQUEST, f"{what} has no numeric iat")
        if iat > now + self._leeway_seconds:
            raise EventTokenRejected(INVALID_REQUEST, f"{what} iat is in the future")
        if iat < now - self._max_age_seconds - self._leeway_seconds:
            raise EventTokenRejected(INVALID_REQUEST, f"{what} iat is too old")
        exp = _number(claims.get("exp"))
        if self._require_exp and "exp" not in claims:
            raise EventTokenRejected(INVALID_REQUEST, f"{what} has no exp")
        if "exp" in claims and exp is None:
            raise EventTokenRejected(INVALID_REQUEST, f"{what} exp is not a number")
        if exp is not None and exp <= now - self._leeway_seconds:
            raise EventTokenRejected(INVALID_REQUEST, f"{what} has expired")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or len(jti) > MAX_JTI_LENGTH:
            raise EventTokenRejected(INVALID_REQUEST, f"{what} has no usable jti")
        # Remembered for as long as an event with this iat is accepted at all.
        until = dt.datetime.fromtimestamp(
            iat + self._max_age_seconds + 2 * self._leeway_seconds, dt.UTC
        )
        return EventId(issuer=iss, jti=jti, expires_at=until)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
