"""Verification of an OpenID Connect ID token (OIDC Core 3.1.3.7), then the identity a sign-in
proves (:class:`Identities`).

The signature (joserfc), with a key chosen by ``kid`` and an allowed algorithm; then ``iss``
exactly, ``aud`` with the client id and no untrusted audience, ``azp``, the times with a small
leeway, ``nonce``, ``sub``. A failure raises
:class:`~authgate.ports.provider.VerificationFailed` with a log-safe text (never the token).
"""

from __future__ import annotations

import datetime as dt
import hmac
import json
import logging
from collections.abc import Mapping
from typing import Any

from authgate.adapters.http_fetch import FetchError, ProviderHttp, with_query
from authgate.adapters.jose.key_sets import (
    KeySetCache,
    json_object,
    loggable,
    signed_header,
    verified_payload,
)
from authgate.adapters.provider.discovery import Endpoints
from authgate.adapters.provider.settings import ProviderSettings
from authgate.domain.model import ProviderIdentity, VerifiedIdentity
from authgate.domain.secrets import appsecret_proof
from authgate.ports.clock import Clock
from authgate.ports.provider import ExchangeFailed, VerificationFailed

log = logging.getLogger("authgate.identity")


class IdTokenVerifier:
    """Verifies ID tokens of one provider (one with an issuer: plain OAuth 2.0 issues none)."""

    def __init__(self, settings: ProviderSettings, keys: KeySetCache, clock: Clock) -> None:
        assert settings.issuer is not None
        self._keys = keys
        self._clock = clock
        self._issuers = frozenset({settings.issuer, *settings.additional_issuers})
        self._client_id = settings.client_id
        self._trusted_audiences = frozenset(settings.trusted_audiences)
        self._algorithms = frozenset(settings.id_token_algorithms)
        self._leeway = settings.leeway_seconds

    async def verify(self, token: str, *, nonce: str | None) -> dict[str, Any]:
        """The verified claims of ``token``: VerificationFailed when it does not verify,
        ExchangeFailed when no key set could be loaded (an outage, not an attack)."""
        alg, kid = signed_header(token, self._algorithms)
        claims = json_object(await verified_payload(self._keys, token, alg, kid))
        self._check_claims(claims, nonce)
        return claims

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


# Claims of an ID token or userinfo answer kept as profile data (no token material, no nonce).
PROFILE_CLAIMS = (
    "name",
    "given_name",
    "family_name",
    "picture",
    "locale",
    "email",
    "email_verified",
    "is_private_email",
)
PROFILE_FIELDS = ("id", "name", "first_name", "last_name", "email", "picture")
MAX_NAME_LENGTH = 200


class Identities:
    """Makes the :class:`VerifiedIdentity` of a sign-in at one provider."""

    def __init__(self, settings: ProviderSettings, http: ProviderHttp) -> None:
        self._settings = settings
        self._http = http
        self._name = settings.name

    async def from_claims(
        self, endpoints: Endpoints, claims: Mapping[str, Any], access_token: str, user: str | None
    ) -> VerifiedIdentity:
        """The identity of verified ID token ``claims``; without an email among them, the
        userinfo endpoint's (best effort). ``user``: Apple's first-time JSON (for the name)."""
        subject = claims["sub"]
        profile = {k: claims[k] for k in PROFILE_CLAIMS if k in claims}
        email = _email(claims.get("email"))
        email_verified = _email_verified(claims.get("email_verified")) if email else None
        name = _name(claims.get("name"))
        if email is None and endpoints.userinfo_endpoint is not None:
            with self._http.timed("userinfo") as timed:
                info = await self._userinfo(endpoints.userinfo_endpoint, access_token, subject)
                timed.ok = info is not None  # a failed best-effort call answers None
            if info is not None:
                profile.update({k: info[k] for k in PROFILE_CLAIMS if k in info})
                email = _email(info.get("email"))
                email_verified = _email_verified(info.get("email_verified")) if email else None
                name = name or _name(info.get("name"))
        if name is None and user is not None and self._settings.is_apple:
            name = _apple_user_name(user, self._name)
            if name is not None:
                profile["name"] = name
        sid = claims.get("sid")
        return VerifiedIdentity(
            identity=ProviderIdentity(self._name, subject),
            email=email,
            email_verified=email_verified,
            name=name,
            profile=profile,
            provider_session=sid if isinstance(sid, str) and 0 < len(sid) <= 255 else None,
            auth_time=_auth_time(claims.get("auth_time")),
        )

    async def _userinfo(
        self, url: str, access_token: str, subject: str
    ) -> Mapping[str, Any] | None:
        """The userinfo claims (OIDC Core 5.3), or None when the call fails (best effort)."""
        what = f"provider {self._name}: userinfo endpoint"
        try:
            answer = await self._http.call(
                "GET", url, what, FetchError, headers=_bearer(access_token)
            )
        except FetchError as e:
            log.warning("%s; continuing without the email", e)
            return None
        if answer.status != 200 or not isinstance(answer.body, dict):
            log.warning(
                "provider %s: userinfo endpoint answered HTTP %s; continuing without the email",
                self._name,
                answer.status,
            )
            return None
        # OIDC Core 5.3.4: the userinfo sub must be the ID token's, or the answer is not used.
        if answer.body.get("sub") != subject:
            raise VerificationFailed(
                f"provider {self._name}: userinfo sub differs from the ID token"
            )
        return answer.body

    async def from_profile(self, endpoints: Endpoints, access_token: str) -> VerifiedIdentity:
        """The identity of the profile endpoint's (or the userinfo endpoint's) answer."""
        settings = self._settings
        url = settings.profile_endpoint or endpoints.userinfo_endpoint
        assert url is not None
        params: dict[str, str] = {}
        if settings.profile_endpoint is not None:
            assert settings.client_secret is not None
            # Graph API: proves that the call comes from the app holding the secret.
            params["appsecret_proof"] = appsecret_proof(settings.client_secret, access_token)
        what = f"provider {self._name}: profile endpoint"
        answer = await self._http.call(
            "GET", with_query(url, params), what, ExchangeFailed, headers=_bearer(access_token)
        )
        body = answer.body
        if answer.status != 200:
            raise ExchangeFailed(f"{what} answered HTTP {answer.status}")
        if not isinstance(body, dict):
            raise ExchangeFailed(f"{what} answered a body that is not a JSON object")
        subject = body.get("id", body.get("sub"))
        if isinstance(subject, int) and not isinstance(subject, bool):
            subject = str(subject)
        if not isinstance(subject, str) or not subject or len(subject) > 255:
            raise VerificationFailed(f"{what}: the answer has no usable id")
        return VerifiedIdentity(
            identity=ProviderIdentity(self._name, subject),
            email=_email(body.get("email")),
            # A profile answer is not a signed statement that the address was verified.
            email_verified=None,
            name=_name(body.get("name")),
            profile={k: body[k] for k in PROFILE_FIELDS if k in body},
        )


def _bearer(access_token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {access_token}"}


def _email(value: Any) -> str | None:
    if isinstance(value, str) and "@" in value and len(value) <= 320:
        return value
    return None


def _email_verified(value: Any) -> bool | None:
    """``email_verified``: a boolean, or (Apple) the string "true" / "false"."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise VerificationFailed("email_verified is neither a boolean nor 'true'/'false'")


def _auth_time(value: Any) -> dt.datetime | None:
    """The ``auth_time`` claim (seconds since the epoch); None when absent or not a time, so
    that it proves nothing rather than failing the sign-in."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        return dt.datetime.fromtimestamp(value, dt.UTC)
    except (OverflowError, ValueError, OSError):  # infinite, NaN, or beyond the calendar
        return None


def _name(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()[:MAX_NAME_LENGTH]
    return None


def _apple_user_name(user: str, provider: str) -> str | None:
    """The name in Apple's first-time ``user`` JSON (unsigned: used for the name only)."""
    try:
        data = json.loads(user)
    except (ValueError, RecursionError):
        log.info("provider %s: the user parameter is not JSON; ignored", provider)
        return None
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(name, dict):
        return None
    first, last = name.get("firstName"), name.get("lastName")
    words = [w.strip() for w in (first, last) if isinstance(w, str) and w.strip()]
    return _name(" ".join(words))
