"""The WebAuthn relying party: the ceremonies' options (the JSON form a page hands
``navigator.credentials``), and the verification of the browser's responses to them.

It verifies the type, challenge, origin, RP ID hash, user presence and verification, no
cross-origin frame, no BS flag without BE; for a registration, a credential id of at most 1,023
bytes and a key of an algorithm offered; for an assertion, the signature and BE unchanged. The
rest (challenges, credentials, the counter, sessions, audit) is the passkey service's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from authgate.domain.passkeys import NewCredential, Passkey, PasskeyUser, VerifiedAssertion


class ResponseMalformed(Exception):
    """The response cannot be decoded as this ceremony's; ``detail`` tells the person why."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


class ResponseNotVerified(Exception):
    """The response was read but failed a check; ``reason`` names which."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ReadAssertion(Protocol):
    """An authentication response as read, not yet verified: what finds its passkey."""

    @property
    def credential_id(self) -> bytes:
        """The credential that signed (``rawId``)."""

    @property
    def user_handle(self) -> bytes | None:
        """The user handle the authenticator returned, if any."""


class WebAuthnRelyingParty(Protocol):
    """One relying party (its RP ID, name and origins); every method is pure computation."""

    def creation_options(
        self, user: PasskeyUser, excluded: Sequence[Passkey], challenge: bytes
    ) -> dict[str, Any]:
        """``PublicKeyCredentialCreationOptions`` (JSON form, no ``timeout``, no attestation)
        excluding the passkeys in ``excluded``."""

    def verify_registration(self, response: Mapping[str, Any], challenge: bytes) -> NewCredential:
        """The credential of a registration response that answers ``challenge``;
        :class:`ResponseMalformed` or :class:`ResponseNotVerified`."""

    def request_options(self, challenge: bytes) -> dict[str, Any]:
        """``PublicKeyCredentialRequestOptions`` (JSON form, no ``timeout``, an empty
        ``allowCredentials``)."""

    def read_assertion(self, response: Mapping[str, Any]) -> ReadAssertion:
        """Decode an authentication response; :class:`ResponseMalformed` when it cannot be."""

    def verify_assertion(
        self, assertion: ReadAssertion, challenge: bytes, passkey: Passkey
    ) -> VerifiedAssertion:
        """Verify an assertion this relying party read against ``challenge`` and ``passkey``;
        :class:`ResponseNotVerified` or :class:`ResponseMalformed`. The signature counter is
        reported, not judged."""
