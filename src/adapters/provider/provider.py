"""The identity-provider adapter: one class, configured per provider (google, facebook, apple).

``authorization_url`` builds the redirect to the provider; ``exchange`` redeems the code at the
token endpoint and turns the answer into a :class:`VerifiedIdentity` — from a verified ID token
(OpenID Connect), or from a profile request (plain OAuth 2.0).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import aiohttp
import attrs
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from authgate.adapters.provider.credentials import ClientAuthenticator
from authgate.adapters.provider.discovery import EndpointResolver, Endpoints, explicit_endpoints
from authgate.adapters.provider.event_token import (
    APPLE_TYPES,
    LOGOUT_TYPES,
    SECEVENT_TYPES,
    EventTokenVerifierAdapter,
)
from authgate.adapters.provider.fetch import (
    FetchError,
    JsonResponse,
    ProviderCallTimer,
    oauth_error_code,
    request_json,
)
from authgate.adapters.provider.id_token import IdTokenVerifier, loggable
from authgate.adapters.provider.jwks import KeySetCache, KeySetUnavailable
from authgate.adapters.provider.settings import ProviderSettings
from authgate.domain.errors import ProviderUnavailable
from authgate.domain.model import ProviderIdentity, ProviderToken, VerifiedIdentity
from authgate.domain.secrets import appsecret_proof
from authgate.ports.clock import Clock
from authgate.ports.metrics import Metrics, NoMetrics, ProviderCall
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from authgate.ports.provider_tokens import RevocationFailed, Revoked

if TYPE_CHECKING:
    from authgate.ports.provider import IdentityProvider

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


@attrs.frozen
class TokenResponse:
    access_token: str = attrs.field(repr=False)
    id_token: str | None = attrs.field(repr=False)
    refresh_token: str | None = attrs.field(default=None, repr=False)

    def to_revoke(self) -> ProviderToken:
        """The token that ends the grant at the provider's revocation endpoint: the refresh
        token when one was issued (revoking it ends the grant, RFC 7009 2.1), else the
        access token."""
        if self.refresh_token:
            return ProviderToken(self.refresh_token, "refresh_token")
        return ProviderToken(self.access_token, "access_token")


class OAuthIdentityProvider:
    """An :class:`~authgate.ports.provider.IdentityProvider` for one configured provider.

    ``session`` is shared and owned by the caller (it closes it); ``clock`` drives every
    time check (token lifetimes, cache ages, rate limits).
    """

    def __init__(
        self,
        settings: ProviderSettings,
        session: aiohttp.ClientSession,
        clock: Clock,
        metrics: Metrics | None = None,
    ) -> None:
        self._settings = settings
        self._metrics: Metrics = metrics or NoMetrics()
        self._session = session
        self._clock = clock
        self._endpoints = EndpointResolver(settings, session, clock, self._metrics)
        self._client_auth = ClientAuthenticator(settings, clock)
        self.key_set = KeySetCache(
            self._timed_key_set,
            clock,
            max_age_seconds=settings.jwks_max_age_seconds,
            min_refetch_seconds=settings.jwks_min_refetch_seconds,
            absent_kid_seconds=settings.jwks_absent_kid_seconds,
            name=settings.name,
        )
        # The keys of pushed event tokens (logout tokens, Apple notifications): the same
        # key set, in a cache of its own, so that forged tokens posted to the public receivers
        # spend their own fetch budget and never the sign-ins'.
        self.event_key_set = KeySetCache(
            self._timed_key_set,
            clock,
            max_age_seconds=settings.jwks_max_age_seconds,
            min_refetch_seconds=settings.jwks_min_refetch_seconds,
            absent_kid_seconds=settings.jwks_absent_kid_seconds,
            name=f"{settings.name} (events)",
        )
        self._verifier: IdTokenVerifier | None = None
        if settings.issuer is not None:
            self._verifier = IdTokenVerifier(
                keys=self.key_set,
                clock=clock,
                issuer=settings.issuer,
                client_id=settings.client_id,
                additional_issuers=settings.additional_issuers,
                trusted_audiences=settings.trusted_audiences,
                algorithms=settings.id_token_algorithms,
                leeway_seconds=settings.leeway_seconds,
            )

    # -- the port's properties -------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._settings.name

    @property
    def client_id(self) -> str:
        return self._settings.client_id

    @property
    def scopes(self) -> tuple[str, ...]:
        return self._settings.scopes

    @property
    def uses_nonce(self) -> bool:
        return self._settings.uses_id_token

    @property
    def uses_pkce(self) -> bool:
        return self._settings.pkce

    @property
    def proves_login_time(self) -> bool:
        return self._settings.proves_login_time

    @property
    def discovers(self) -> bool:
        """Whether the endpoints come from OpenID Connect discovery (configuration does not
        name every one needed)."""
        return explicit_endpoints(self._settings) is None

    async def endpoints(self) -> Endpoints:
        """The endpoints (discovered on first use; ``authgate config check`` reaches them);
        raises ProviderUnavailable when discovery cannot be loaded."""
        return await self._endpoints.get()

    # -- initiation -------------------------------------------------------------------------

    async def authorization_url(
        self,
        *,
        state: str,
        redirect_uri: str,
        code_challenge: str | None,
        nonce: str | None,
        reauthenticate: bool = False,
        login_hint: str | None = None,
    ) -> str:
        endpoints = await self._endpoints.get()
        params: dict[str, str] = {
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "scope": " ".join(self.scopes),
            "state": state,
        }
        if code_challenge is not None:
            params["code_challenge"] = code_challenge
            params["code_challenge_method"] = "S256"
        if nonce is not None:
            params["nonce"] = nonce
        if self._settings.response_mode == "form_post":
            params["response_mode"] = "form_post"
        if reauthenticate and self._settings.uses_id_token:
            # OIDC Core 3.1.2.1: authenticate again, whatever session the provider holds. Only
            # the ID token's signed auth_time proves that it did: the browser can strip these.
            params["prompt"] = "login"
            params["max_age"] = "0"
        elif self._settings.uses_id_token and self._settings.signin_max_age_seconds:
            # With max_age, auth_time is a required claim (OIDC Core 3.1.2.1): every sign-in
            # then proves when the person logged in.
            params["max_age"] = str(self._settings.signin_max_age_seconds)
        elif reauthenticate and self._settings.profile_endpoint is not None:
            # Facebook Login: ask for the password again, even with a facebook session.
            params["auth_type"] = "reauthenticate"
        if login_hint and self._settings.uses_id_token:
            params["login_hint"] = login_hint
        try:
            return _with_query(endpoints.authorization_endpoint, params)
        except ValueError:
            raise ProviderUnavailable(
                f"provider {self.name}: the authorization endpoint is not a valid URL"
            ) from None

    # -- callback ---------------------------------------------------------------------------

    async def check_response_issuer(self, iss: str | None) -> None:
        """RFC 9207 (mix-up defence): the authorization response's ``iss`` is this provider's.

        A given ``iss`` needs no discovery: it is compared with the configured issuer, which
        discovery has checked to be the document's. Only a missing ``iss`` asks whether the
        provider promises to send it.
        """
        expected = self._settings.issuer
        if iss is not None:
            if expected is None:
                raise VerificationFailed(
                    f"provider {self.name}: the authorization response has iss {loggable(iss)} "
                    "but this provider has no issuer (mix-up?)"
                )
            if iss != expected:  # exactly (RFC 9207 2.4): no normalisation
                raise VerificationFailed(
                    f"provider {self.name}: the authorization response iss {loggable(iss)} "
                    "is not the provider's issuer (mix-up?)"
                )
            return
        if self._settings.require_response_iss:
            raise VerificationFailed(
                f"provider {self.name}: the authorization response has no iss (required)"
            )
        if expected is None:
            return
        try:
            endpoints = await self._endpoints.get()
        except ProviderUnavailable as e:
            raise ExchangeFailed(str(e)) from None
        if endpoints.response_iss_supported:
            raise VerificationFailed(
                f"provider {self.name}: the authorization response has no iss, "
                "which the provider's discovery document promises"
            )

    async def exchange(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str | None,
        nonce: str | None,
        user: str | None = None,
    ) -> VerifiedIdentity:
        try:
            endpoints = await self._endpoints.get()
        except ProviderUnavailable as e:
            raise ExchangeFailed(str(e)) from None
        with self._timed("token"):
            tokens = await self._redeem(endpoints, code, redirect_uri, code_verifier)
        if self._verifier is None:
            with self._timed("userinfo"):
                verified = await self._identity_from_profile(endpoints, tokens.access_token)
        else:
            if tokens.id_token is None:
                raise ExchangeFailed(f"provider {self.name}: the token answer has no id_token")
            claims = await self._verifier.verify(tokens.id_token, nonce=nonce)
            verified = await self._identity_from_claims(
                endpoints, claims, tokens.access_token, user
            )
        if endpoints.revocation_endpoint is None:
            return verified
        # Kept (sealed) to be revoked when the identity is unlinked or the account deleted.
        return attrs.evolve(verified, provider_token=tokens.to_revoke())

    async def verify_id_token(self, token: str, *, nonce: str | None) -> dict[str, Any]:
        """The verified claims of an ID token of this provider (raises VerificationFailed)."""
        if self._verifier is None:
            raise VerificationFailed(f"provider {self.name} does not issue ID tokens")
        return await self._verifier.verify(token, nonce=nonce)

    # -- provider events ---------------------------------------------------------

    def event_issuers(self) -> tuple[str, ...]:
        """The ``iss`` values of this provider's event tokens: its issuer as configured, with
        and without a trailing slash (Google's RISC tokens end with one), and the others it
        uses."""
        issuer = self._settings.issuer
        if issuer is None:
            raise ValueError(f"provider {self.name} has no issuer: it sends no event tokens")
        base = issuer.rstrip("/")
        return tuple(dict.fromkeys([issuer, base, base + "/", *self._settings.additional_issuers]))

    def logout_token_verifier(
        self, *, max_age_seconds: float, audiences: Collection[str] = ()
    ) -> EventTokenVerifierAdapter:
        """Back-channel logout tokens, on the key set of the ID tokens (the events' cache).
        ``audiences``: other ``aud`` values accepted as ours beside the client id. ``exp`` is
        required (Back-Channel Logout 1.0, errata set 1)."""
        return self._event_verifier(
            self.event_key_set,
            LOGOUT_TYPES,
            max_age_seconds,
            "logout token",
            audiences,
            require_exp=True,
        )

    def apple_notification_verifier(
        self, *, max_age_seconds: float, audiences: Collection[str] = ()
    ) -> EventTokenVerifierAdapter:
        """Sign in with Apple notifications, on the key set of the ID tokens (the events'
        cache)."""
        return self._event_verifier(
            self.event_key_set, APPLE_TYPES, max_age_seconds, "notification", audiences
        )

    def security_event_verifier(
        self,
        *,
        max_age_seconds: float,
        configuration_url: str | None = None,
        audiences: Collection[str] = (),
    ) -> EventTokenVerifierAdapter:
        """Security Event Tokens (RISC), on the key set named by the transmitter's
        configuration document (default ``{issuer}/.well-known/risc-configuration``)."""
        issuer = self.event_issuers()[0]
        url = configuration_url or f"{issuer.rstrip('/')}/.well-known/risc-configuration"
        keys = KeySetCache(
            lambda: self._fetch_security_event_keys(url),
            self._clock,
            max_age_seconds=self._settings.jwks_max_age_seconds,
            min_refetch_seconds=self._settings.jwks_min_refetch_seconds,
            absent_kid_seconds=self._settings.jwks_absent_kid_seconds,
            name=f"{self.name} (security events)",
        )
        return self._event_verifier(
            keys, SECEVENT_TYPES, max_age_seconds, "security event token", audiences
        )

    def _event_verifier(
        self,
        keys: KeySetCache,
        types: frozenset[str],
        max_age: float,
        what: str,
        audiences: Collection[str],
        *,
        require_exp: bool = False,
    ) -> EventTokenVerifierAdapter:
        return EventTokenVerifierAdapter(
            keys=keys,
            clock=self._clock,
            issuers=self.event_issuers(),
            audiences=(self.client_id, *audiences),
            trusted_audiences=self._settings.trusted_audiences,
            require_exp=require_exp,
            algorithms=self._settings.id_token_algorithms,
            types=types,
            max_age_seconds=max_age,
            leeway_seconds=self._settings.leeway_seconds,
            what=f"{self.name} {what}",
        )

    async def _fetch_security_event_keys(self, configuration_url: str) -> KeySet:
        what = f"provider {self.name}: security event configuration"
        answer = await self._get_for_keys(configuration_url, what)
        body = answer.body
        if answer.status != 200 or not isinstance(body, dict):
            raise KeySetUnavailable(f"{what} answered HTTP {answer.status} without a document")
        issuer = body.get("issuer")
        if not isinstance(issuer, str) or issuer not in self.event_issuers():
            raise KeySetUnavailable(f"{what} names issuer {loggable(issuer)}, not the provider's")
        jwks_uri = body.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise KeySetUnavailable(f"{what} has no jwks_uri")
        return await self._fetch_jwks(jwks_uri)

    async def _redeem(
        self, endpoints: Endpoints, code: str, redirect_uri: str, code_verifier: str | None
    ) -> TokenResponse:
        credentials = self._client_auth.credentials()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            **credentials.form,
        }
        if code_verifier is not None:
            form["code_verifier"] = code_verifier
        what = f"provider {self.name}: token endpoint"
        try:
            answer = await request_json(
                self._session,
                "POST",
                endpoints.token_endpoint,
                what=what,
                timeout_seconds=self._settings.timeout_seconds,
                max_bytes=self._settings.max_response_bytes,
                headers=credentials.headers,
                data=form,
            )
        except FetchError as e:
            raise ExchangeFailed(str(e)) from None
        body = answer.body
        if not 200 <= answer.status < 300:
            error = oauth_error_code(body)
            detail = f" (error={error})" if error else ""
            raise ExchangeFailed(f"{what} answered HTTP {answer.status}{detail}")
        if not isinstance(body, dict):
            raise ExchangeFailed(f"{what} answered a body that is not a JSON object")
        access_token = body.get("access_token")
        if not isinstance(access_token, str) or not access_token:
            raise ExchangeFailed(f"{what}: the answer has no access_token")
        token_type = body.get("token_type")
        if token_type is not None and (
            not isinstance(token_type, str) or token_type.lower() != "bearer"
        ):
            raise ExchangeFailed(f"{what}: the token type is not bearer")
        id_token = body.get("id_token")
        if id_token is not None and not isinstance(id_token, str):
            raise ExchangeFailed(f"{what}: id_token is not a string")
        refresh_token = body.get("refresh_token")
        return TokenResponse(
            access_token=access_token,
            id_token=id_token or None,
            refresh_token=refresh_token if isinstance(refresh_token, str) else None,
        )

    # -- revocation (RFC 7009; Apple's /auth/revoke; Google's revoke) -----------------------

    async def revoke(self, token: ProviderToken) -> Revoked:
        """Revoke ``token`` at the provider's revocation endpoint; raises RevocationFailed."""
        what = f"provider {self.name}: revocation endpoint"
        try:
            endpoints = await self._endpoints.get()
        except ProviderUnavailable as e:
            raise RevocationFailed(str(e)) from None
        if endpoints.revocation_endpoint is None:
            raise RevocationFailed(f"{what}: none configured or discovered")
        form = {"token": token.value}
        headers: dict[str, str] = {}
        if self._settings.revocation_authenticates:
            credentials = self._client_auth.credentials()
            form |= {"token_type_hint": token.hint, **credentials.form}
            headers = credentials.headers
        try:
            answer = await request_json(
                self._session,
                "POST",
                endpoints.revocation_endpoint,
                what=what,
                timeout_seconds=self._settings.timeout_seconds,
                max_bytes=self._settings.max_response_bytes,
                headers=headers,
                data=form,
            )
        except FetchError as e:
            raise RevocationFailed(str(e)) from None
        if 200 <= answer.status < 300:
            return Revoked.REVOKED
        error = oauth_error_code(answer.body)
        # Google answers 400 invalid_token for a token it no longer knows (expired, revoked
        # already); RFC 7009 2.2 answers 200 for it. Either way there is nothing to revoke.
        if answer.status == 400 and error in ("invalid_token", "invalid_grant"):
            return Revoked.ALREADY_INVALID
        detail = f" (error={error})" if error else ""
        raise RevocationFailed(f"{what} answered HTTP {answer.status}{detail}")

    async def _identity_from_claims(
        self,
        endpoints: Endpoints,
        claims: Mapping[str, Any],
        access_token: str,
        user: str | None,
    ) -> VerifiedIdentity:
        subject = claims["sub"]
        profile = {k: claims[k] for k in PROFILE_CLAIMS if k in claims}
        email = _email(claims.get("email"))
        email_verified = _email_verified(claims.get("email_verified")) if email else None
        name = _name(claims.get("name"))
        if email is None and endpoints.userinfo_endpoint is not None:
            with self._timed("userinfo") as timed:
                info = await self._userinfo(endpoints.userinfo_endpoint, access_token, subject)
                timed.ok = info is not None  # a failed best-effort call answers None
            if info is not None:
                profile.update({k: info[k] for k in PROFILE_CLAIMS if k in info})
                email = _email(info.get("email"))
                email_verified = _email_verified(info.get("email_verified")) if email else None
                name = name or _name(info.get("name"))
        if name is None and user is not None and self._settings.is_apple:
            name = _apple_user_name(user, self.name)
            if name is not None:
                profile["name"] = name
        sid = claims.get("sid")
        return VerifiedIdentity(
            identity=ProviderIdentity(self.name, subject),
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
        try:
            answer = await request_json(
                self._session,
                "GET",
                url,
                what=f"provider {self.name}: userinfo endpoint",
                timeout_seconds=self._settings.timeout_seconds,
                max_bytes=self._settings.max_response_bytes,
                headers={"Authorization": f"Bearer {access_token}"},
            )
        except FetchError as e:
            log.warning("%s; continuing without the email", e)
            return None
        if answer.status != 200 or not isinstance(answer.body, dict):
            log.warning(
                "provider %s: userinfo endpoint answered HTTP %s; continuing without the email",
                self.name,
                answer.status,
            )
            return None
        # OIDC Core 5.3.4: the userinfo sub must be the ID token's, or the answer is not used.
        if answer.body.get("sub") != subject:
            raise VerificationFailed(
                f"provider {self.name}: userinfo sub differs from the ID token"
            )
        return answer.body

    async def _identity_from_profile(
        self, endpoints: Endpoints, access_token: str
    ) -> VerifiedIdentity:
        settings = self._settings
        url = settings.profile_endpoint or endpoints.userinfo_endpoint
        assert url is not None
        params: dict[str, str] = {}
        if settings.profile_endpoint is not None:
            assert settings.client_secret is not None
            # Graph API: proves that the call comes from the app holding the secret.
            params["appsecret_proof"] = appsecret_proof(settings.client_secret, access_token)
        what = f"provider {self.name}: profile endpoint"
        try:
            answer = await request_json(
                self._session,
                "GET",
                _with_query(url, params),
                what=what,
                timeout_seconds=settings.timeout_seconds,
                max_bytes=settings.max_response_bytes,
                headers={"Authorization": f"Bearer {access_token}"},
            )
        except FetchError as e:
            raise ExchangeFailed(str(e)) from None
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
        email = _email(body.get("email"))
        return VerifiedIdentity(
            identity=ProviderIdentity(self.name, subject),
            email=email,
            # A profile answer is not a signed statement that the address was verified.
            email_verified=None,
            name=_name(body.get("name")),
            profile={k: body[k] for k in PROFILE_FIELDS if k in body},
        )

    async def _timed_key_set(self) -> KeySet:
        with self._timed("jwks"):
            return await self._fetch_key_set()

    def _timed(self, call: ProviderCall) -> ProviderCallTimer:
        return ProviderCallTimer(self._metrics, self.name, call)

    async def _fetch_key_set(self) -> KeySet:
        what = f"provider {self.name}: key set"
        try:
            endpoints = await self._endpoints.get()
        except ProviderUnavailable as e:
            raise KeySetUnavailable(str(e)) from None
        if endpoints.jwks_uri is None:
            raise KeySetUnavailable(f"{what}: no jwks_uri configured or discovered")
        return await self._fetch_jwks(endpoints.jwks_uri)

    async def _get_for_keys(self, url: str, what: str) -> JsonResponse:
        """GET a JSON document on the way to a key set; KeySetUnavailable when it fails."""
        try:
            return await request_json(
                self._session,
                "GET",
                url,
                what=what,
                timeout_seconds=self._settings.timeout_seconds,
                max_bytes=self._settings.max_response_bytes,
            )
        except FetchError as e:
            raise KeySetUnavailable(str(e)) from None

    async def _fetch_jwks(self, jwks_uri: str) -> KeySet:
        what = f"provider {self.name}: key set"
        answer = await self._get_for_keys(jwks_uri, what)
        if answer.status != 200:
            raise KeySetUnavailable(f"{what} answered HTTP {answer.status}")
        body = answer.body
        if not isinstance(body, dict) or not isinstance(body.get("keys"), list):
            raise KeySetUnavailable(f"{what} is not a JSON Web Key Set")
        public = [k for k in body["keys"] if isinstance(k, dict) and not _is_private_jwk(k)]
        try:
            return KeySet.import_key_set({"keys": public})
        except (JoseError, ValueError, TypeError, KeyError):
            raise KeySetUnavailable(f"{what} holds no usable key") from None


def _with_query(url: str, params: Mapping[str, str]) -> str:
    """``url`` with ``params`` added to its query (replacing same-named ones), %20 for spaces."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("not an absolute http(s) URL")
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query = urlencode([*kept, *params.items()], quote_via=quote)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def _is_private_jwk(jwk: Mapping[str, Any]) -> bool:
    # A published set never holds private parts; symmetric keys ("oct") are never accepted.
    return jwk.get("kty") == "oct" or any(p in jwk for p in ("d", "p", "q", "k"))


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


if TYPE_CHECKING:

    def _conforms(provider: OAuthIdentityProvider) -> IdentityProvider:
        return provider
