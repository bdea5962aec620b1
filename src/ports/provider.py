"""External identity providers (OAuth 2.0 / OpenID Connect, authorization-code flow)."""

from __future__ import annotations

from typing import Protocol

from authgate.domain.model import VerifiedIdentity


class ExchangeFailed(Exception):
    """The token endpoint failed or answered something unusable (reason token_exchange_failed).
    The text is for the log only."""


class VerificationFailed(Exception):
    """The provider's answer did not verify (ID token signature or claims, profile).
    The text is for the log only; this is a security event."""


class IdentityProvider(Protocol):
    """One configured provider."""

    @property
    def name(self) -> str: ...

    @property
    def client_id(self) -> str: ...

    @property
    def scopes(self) -> tuple[str, ...]: ...

    @property
    def uses_nonce(self) -> bool:
        """Whether the provider returns an ID token carrying the nonce (OIDC)."""
        ...

    @property
    def uses_pkce(self) -> bool: ...

    @property
    def proves_login_time(self) -> bool:
        """Whether a sign-in through this provider proves when the person logged in: its ID
        tokens carry a signed ``auth_time``. Only such a statement makes a sign-in fresh
        (step-up, an application's ``max_age``); a parameter that asked the provider to log
        the person in again proves nothing, since the browser that carries it can strip it."""
        ...

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
        """The complete authorization URL; with ``reauthenticate``, asking the provider to
        authenticate the user again (OIDC ``prompt=login`` and ``max_age=0``, the Graph API's
        ``auth_type=reauthenticate``) where it can; ``login_hint`` passed on to an OpenID
        Connect provider (OIDC Core 3.1.2.1), ignored by others.
        Raises ProviderUnavailable (domain) when the provider's configuration (discovery)
        cannot be loaded."""
        ...

    async def check_response_issuer(self, iss: str | None) -> None:
        """RFC 9207: check the ``iss`` parameter of the authorization response (``None`` when
        absent) before the code is redeemed.

        Raises :class:`VerificationFailed` when ``iss`` is given and is not exactly the
        provider's issuer (a provider without an issuer accepts no ``iss`` at all), or when it
        is absent although the provider promises it (its discovery document advertises
        ``authorization_response_iss_parameter_supported``, or the configuration requires it);
        :class:`ExchangeFailed` when the provider's configuration (discovery) cannot be loaded
        to tell."""
        ...

    async def exchange(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str | None,
        nonce: str | None,
        user: str | None = None,
    ) -> VerifiedIdentity:
        """Exchange the code and verify the answer. ``user`` is Apple's first-time JSON.
        Raises :class:`ExchangeFailed` or :class:`VerificationFailed`."""
        ...
