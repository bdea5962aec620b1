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
        """Whether a sign-in through this provider proves when the person logged in (a signed
        ``auth_time``; :mod:`authgate.domain.login_proof` says why nothing else does)."""
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
        """RFC 9207: check the authorization response's ``iss`` (None when absent) before the
        code is redeemed. :class:`VerificationFailed` when it is not exactly the provider's
        issuer, or absent although the provider promises it (discovery or configuration);
        :class:`ExchangeFailed` when discovery cannot be loaded to tell."""
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
