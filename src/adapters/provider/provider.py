"""The identity-provider adapter: one class, configured per provider (google, facebook, apple),
putting together the endpoints (:mod:`.discovery`), the code exchange (:mod:`.code_exchange`),
the ID token and identity (:mod:`.id_token`), revocation, and event tokens (:mod:`.event_token`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any

import aiohttp
import attrs
from joserfc.jwk import KeySet

from authgate.adapters.http_fetch import ProviderHttp, oauth_error_code, with_query
from authgate.adapters.jose.key_sets import KeySetCache, KeySetUnavailable, fetch_jwks, loggable
from authgate.adapters.provider.code_exchange import ClientAuthenticator, redeem
from authgate.adapters.provider.discovery import EndpointResolver, Endpoints, explicit_endpoints
from authgate.adapters.provider.event_token import (
    APPLE_TYPES,
    LOGOUT_TYPES,
    SECEVENT_TYPES,
    EventTokenVerifierAdapter,
)
from authgate.adapters.provider.id_token import Identities, IdTokenVerifier
from authgate.adapters.provider.settings import ProviderSettings
from authgate.domain.errors import ProviderUnavailable
from authgate.domain.model import ProviderToken, VerifiedIdentity
from authgate.ports.clock import Clock
from authgate.ports.metrics import Metrics, NoMetrics
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from authgate.ports.provider_tokens import RevocationFailed, Revoked


class OAuthIdentityProvider:
    """An :class:`~authgate.ports.provider.IdentityProvider` for one configured provider, on
    the caller's ``session`` (it closes it). ``discovers``: the endpoints come from discovery.
    ``key_set`` holds the ID tokens' keys, ``event_key_set`` the same keys for event tokens."""

    def __init__(
        self,
        settings: ProviderSettings,
        session: aiohttp.ClientSession,
        clock: Clock,
        metrics: Metrics | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self.name = settings.name
        self.client_id = settings.client_id
        self.scopes = settings.scopes
        self.uses_nonce = settings.uses_id_token
        self.uses_pkce = settings.pkce
        self.proves_login_time = settings.proves_login_time
        self.discovers = explicit_endpoints(settings) is None
        self._http = ProviderHttp(
            self.name,
            session,
            settings.timeout_seconds,
            settings.max_response_bytes,
            metrics or NoMetrics(),
        )
        self._endpoints = EndpointResolver(settings, self._http, clock)
        self._client_auth = ClientAuthenticator(settings, clock)
        self._identities = Identities(settings, self._http)
        self.key_set = self._key_set_cache(self._key_set, self.name)
        self.event_key_set = self._key_set_cache(self._key_set, f"{self.name} (events)")
        self._verifier = (
            IdTokenVerifier(settings, self.key_set, clock) if settings.issuer is not None else None
        )

    async def endpoints(self) -> Endpoints:
        """The endpoints (discovered on first use; ``authgate config check`` reaches them);
        raises ProviderUnavailable when discovery cannot be loaded."""
        return await self._endpoints.get()

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
        settings = self._settings
        params: dict[str, str] = {
            "client_id": settings.client_id,
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "scope": " ".join(settings.scopes),
            "state": state,
        }
        if code_challenge is not None:
            params["code_challenge"] = code_challenge
            params["code_challenge_method"] = "S256"
        if nonce is not None:
            params["nonce"] = nonce
        if settings.response_mode == "form_post":
            params["response_mode"] = "form_post"
        params |= _reauthentication(settings, reauthenticate)
        if login_hint and settings.uses_id_token:
            params["login_hint"] = login_hint
        endpoints = await self._endpoints.get()
        try:
            return with_query(endpoints.authorization_endpoint, params)
        except ValueError:
            raise ProviderUnavailable(
                f"provider {self.name}: the authorization endpoint is not a valid URL"
            ) from None

    async def check_response_issuer(self, iss: str | None) -> None:
        """RFC 9207 (mix-up defence). A given ``iss`` is compared with the configured issuer
        (which discovery checked to be the document's), without discovery; only a missing one
        asks whether the provider promises to send it."""
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
        if (
            expected is not None
            and (await self._endpoints.get_or(ExchangeFailed)).response_iss_supported
        ):
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
        endpoints = await self._endpoints.get_or(ExchangeFailed)
        with self._http.timed("token"):
            tokens = await redeem(
                self._http,
                self._client_auth,
                endpoints.token_endpoint,
                code,
                redirect_uri,
                code_verifier,
            )
        if self._verifier is None:
            with self._http.timed("userinfo"):
                verified = await self._identities.from_profile(endpoints, tokens.access_token)
        else:
            if tokens.id_token is None:
                raise ExchangeFailed(f"provider {self.name}: the token answer has no id_token")
            claims = await self._verifier.verify(tokens.id_token, nonce=nonce)
            verified = await self._identities.from_claims(
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

    async def revoke(self, token: ProviderToken) -> Revoked:
        """Revoke ``token`` at the provider's revocation endpoint (RFC 7009; Apple's
        /auth/revoke; Google's revoke); raises RevocationFailed."""
        endpoint = (await self._endpoints.get_or(RevocationFailed)).revocation_endpoint
        what = f"provider {self.name}: revocation endpoint"
        if endpoint is None:
            raise RevocationFailed(f"{what}: none configured or discovered")
        form = {"token": token.value}
        headers: dict[str, str] = {}
        if self._settings.revocation_authenticates:
            credentials = self._client_auth.credentials()
            form |= {"token_type_hint": token.hint, **credentials.form}
            headers = credentials.headers
        answer = await self._http.call(
            "POST", endpoint, what, RevocationFailed, headers=headers, data=form
        )
        if 200 <= answer.status < 300:
            return Revoked.REVOKED
        error = oauth_error_code(answer.body)
        # Google answers 400 invalid_token for a token it no longer knows (expired, revoked
        # already); RFC 7009 2.2 answers 200 for it. Either way there is nothing to revoke.
        if answer.status == 400 and error in ("invalid_token", "invalid_grant"):
            return Revoked.ALREADY_INVALID
        detail = f" (error={error})" if error else ""
        raise RevocationFailed(f"{what} answered HTTP {answer.status}{detail}")

    # -- provider events: ``event_key_set`` is the ID tokens' key set in a cache of its own, so
    # that forged tokens posted to the public receivers spend their own fetch budget, never
    # the sign-ins'. ``audiences``: ``aud`` values accepted as ours beside the client id.

    def event_issuers(self) -> tuple[str, ...]:
        """The ``iss`` values of this provider's event tokens: its issuer as configured, with
        and without a trailing slash (Google's RISC tokens end with one), and its others."""
        issuer = self._settings.issuer
        if issuer is None:
            raise ValueError(f"provider {self.name} has no issuer: it sends no event tokens")
        base = issuer.rstrip("/")
        return tuple(dict.fromkeys([issuer, base, base + "/", *self._settings.additional_issuers]))

    def logout_token_verifier(
        self, *, max_age_seconds: float, audiences: Collection[str] = ()
    ) -> EventTokenVerifierAdapter:
        """Back-channel logout tokens; ``exp`` is required (Back-Channel Logout 1.0, errata
        set 1)."""
        return self._event_verifier(
            self.event_key_set, LOGOUT_TYPES, max_age_seconds, "logout token", audiences, True
        )

    def apple_notification_verifier(
        self, *, max_age_seconds: float, audiences: Collection[str] = ()
    ) -> EventTokenVerifierAdapter:
        """Sign in with Apple notifications."""
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
        keys = self._key_set_cache(
            lambda: self._security_event_keys(url), f"{self.name} (security events)"
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

    async def _security_event_keys(self, configuration_url: str) -> KeySet:
        what = f"provider {self.name}: security event configuration"
        answer = await self._http.call("GET", configuration_url, what, KeySetUnavailable)
        body = answer.body
        if answer.status != 200 or not isinstance(body, dict):
            raise KeySetUnavailable(f"{what} answered HTTP {answer.status} without a document")
        issuer = body.get("issuer")
        if not isinstance(issuer, str) or issuer not in self.event_issuers():
            raise KeySetUnavailable(f"{what} names issuer {loggable(issuer)}, not the provider's")
        jwks_uri = body.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise KeySetUnavailable(f"{what} has no jwks_uri")
        return await fetch_jwks(self._http, jwks_uri)

    def _key_set_cache(self, fetch: Callable[[], Awaitable[KeySet]], name: str) -> KeySetCache:
        """A cache with the provider's ``jwks_*`` settings, named ``name`` in its log lines."""
        return KeySetCache(
            fetch,
            self._clock,
            max_age_seconds=self._settings.jwks_max_age_seconds,
            min_refetch_seconds=self._settings.jwks_min_refetch_seconds,
            absent_kid_seconds=self._settings.jwks_absent_kid_seconds,
            name=name,
        )

    async def _key_set(self) -> KeySet:
        """The provider's key set at its (configured or discovered) ``jwks_uri``, timed."""
        with self._http.timed("jwks"):
            endpoints = await self._endpoints.get_or(KeySetUnavailable)
            if endpoints.jwks_uri is None:
                raise KeySetUnavailable(
                    f"provider {self.name}: key set: no jwks_uri configured or discovered"
                )
            return await fetch_jwks(self._http, endpoints.jwks_uri)


def _reauthentication(settings: ProviderSettings, reauthenticate: bool) -> dict[str, str]:
    """The parameters asking the provider to authenticate the person again, or to say when
    it last did."""
    if reauthenticate and settings.uses_id_token:
        # OIDC Core 3.1.2.1: authenticate again, whatever session the provider holds. Only
        # the ID token's signed auth_time proves that it did: the browser can strip these.
        return {"prompt": "login", "max_age": "0"}
    if settings.uses_id_token and settings.signin_max_age_seconds:
        # With max_age, auth_time is a required claim (OIDC Core 3.1.2.1): every sign-in
        # then proves when the person logged in.
        return {"max_age": str(settings.signin_max_age_seconds)}
    if reauthenticate and settings.profile_endpoint is not None:
        # Facebook Login: ask for the password again, even with a facebook session.
        return {"auth_type": "reauthenticate"}
    return {}
