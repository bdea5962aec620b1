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

    async def authorization_url(
        self,
        *,
        state: str,
        redirect_uri: str,
        code_challenge: str | None,
        nonce: str | None,
    ) -> str:
        """The complete authorization URL. Raises ProviderUnavailable (domain) when the
        provider's configuration (discovery) cannot be loaded."""
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
