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

    name: str
    client_id: str
    scopes: tuple[str, ...]
    uses_nonce: bool  # the provider returns an ID token carrying the nonce (OIDC)
    uses_pkce: bool
    # Whether a sign-in proves when the person logged in (:mod:`authgate.domain.login_proof`).
    proves_login_time: bool

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
        """The authorization URL; ``reauthenticate`` asks the provider to log the user in again
        where it can; ``login_hint`` only for OpenID Connect. Raises
        :class:`~authgate.domain.errors.ProviderUnavailable` when discovery fails."""

    async def check_response_issuer(self, iss: str | None) -> None:
        """RFC 9207: before the code is redeemed, :class:`VerificationFailed` when the
        response's ``iss`` is not the provider's issuer, or absent although promised;
        :class:`ExchangeFailed` when discovery cannot be loaded to tell."""

    async def exchange(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str | None,
        nonce: str | None,
        user: str | None = None,
    ) -> VerifiedIdentity:
        """Exchange the code and verify the answer (``user``: Apple's first-time JSON); raises
        :class:`ExchangeFailed` or :class:`VerificationFailed`."""
