"""The identity a sign-in proves: from the verified ID token's claims, completed by the
userinfo endpoint (OpenID Connect), or from a profile request (plain OAuth 2.0)."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Mapping
from typing import Any

from authgate.adapters.provider.authorization import with_query
from authgate.adapters.provider.discovery import Endpoints
from authgate.adapters.provider.fetch import FetchError, ProviderHttp
from authgate.adapters.provider.settings import ProviderSettings
from authgate.domain.model import ProviderIdentity, VerifiedIdentity
from authgate.domain.secrets import appsecret_proof
from authgate.ports.provider import ExchangeFailed, VerificationFailed

log = logging.getLogger("authgate.identity")

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
