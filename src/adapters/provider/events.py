"""The verifiers of a provider's pushed event tokens: back-channel logout tokens, Sign in with
Apple notifications and Security Event Tokens (RISC)."""

from __future__ import annotations

from collections.abc import Collection

import attrs
from joserfc.jwk import KeySet

from authgate.adapters.http_fetch import ProviderHttp
from authgate.adapters.jose.key_sets import (
    KeySetCache,
    KeySetUnavailable,
    fetch_jwks,
    loggable,
)
from authgate.adapters.provider.event_token import (
    APPLE_TYPES,
    LOGOUT_TYPES,
    SECEVENT_TYPES,
    EventTokenVerifierAdapter,
)
from authgate.adapters.provider.settings import ProviderSettings
from authgate.ports.clock import Clock


@attrs.frozen
class ProviderEvents:
    """Makes the event token verifiers of one provider. ``keys``: the ID tokens' key set in
    a cache of its own, so that forged tokens posted to the public receivers spend their own
    fetch budget and never the sign-ins'."""

    _settings: ProviderSettings
    _http: ProviderHttp
    _clock: Clock
    _keys: KeySetCache

    @property
    def _name(self) -> str:
        return self._settings.name

    def issuers(self) -> tuple[str, ...]:
        """The ``iss`` values of this provider's event tokens: its issuer as configured, with
        and without a trailing slash (Google's RISC tokens end with one), and the others it
        uses."""
        issuer = self._settings.issuer
        if issuer is None:
            raise ValueError(f"provider {self._name} has no issuer: it sends no event tokens")
        base = issuer.rstrip("/")
        return tuple(dict.fromkeys([issuer, base, base + "/", *self._settings.additional_issuers]))

    def logout_tokens(
        self, max_age_seconds: float, audiences: Collection[str]
    ) -> EventTokenVerifierAdapter:
        """Back-channel logout tokens; ``exp`` is required (Back-Channel Logout 1.0, errata
        set 1)."""
        return self._verifier(
            self._keys, LOGOUT_TYPES, max_age_seconds, "logout token", audiences, require_exp=True
        )

    def apple_notifications(
        self, max_age_seconds: float, audiences: Collection[str]
    ) -> EventTokenVerifierAdapter:
        """Sign in with Apple notifications."""
        return self._verifier(self._keys, APPLE_TYPES, max_age_seconds, "notification", audiences)

    def security_events(
        self, max_age_seconds: float, configuration_url: str | None, audiences: Collection[str]
    ) -> EventTokenVerifierAdapter:
        """Security Event Tokens (RISC), on the key set named by the transmitter's
        configuration document (default ``{issuer}/.well-known/risc-configuration``)."""
        issuer = self.issuers()[0]
        url = configuration_url or f"{issuer.rstrip('/')}/.well-known/risc-configuration"
        keys = KeySetCache.for_provider(
            lambda: self._security_event_keys(url),
            self._clock,
            self._settings,
            f"{self._name} (security events)",
        )
        return self._verifier(
            keys, SECEVENT_TYPES, max_age_seconds, "security event token", audiences
        )

    def _verifier(
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
            issuers=self.issuers(),
            audiences=(self._settings.client_id, *audiences),
            trusted_audiences=self._settings.trusted_audiences,
            require_exp=require_exp,
            algorithms=self._settings.id_token_algorithms,
            types=types,
            max_age_seconds=max_age,
            leeway_seconds=self._settings.leeway_seconds,
            what=f"{self._name} {what}",
        )

    async def _security_event_keys(self, configuration_url: str) -> KeySet:
        what = f"provider {self._name}: security event configuration"
        answer = await self._http.call("GET", configuration_url, what, KeySetUnavailable)
        body = answer.body
        if answer.status != 200 or not isinstance(body, dict):
            raise KeySetUnavailable(f"{what} answered HTTP {answer.status} without a document")
        issuer = body.get("issuer")
        if not isinstance(issuer, str) or issuer not in self.issuers():
            raise KeySetUnavailable(f"{what} names issuer {loggable(issuer)}, not the provider's")
        jwks_uri = body.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise KeySetUnavailable(f"{what} has no jwks_uri")
        return await fetch_jwks(self._http, jwks_uri)
