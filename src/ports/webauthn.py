"""The WebAuthn relying party: the ceremonies' options (the JSON form a page hands
``navigator.credentials``), and the verification of the browser's responses to them.

It verifies the ceremony's type, the challenge, the origin, the RP ID hash, user presence and
verification (required in both ceremonies), no cross-origin frame, no backup state (BS) without
backup eligibility (BE); for a registration, a credential id of at most 1,023 bytes and a key
of an algorithm the options offered; for an assertion, the signature and the passkey's backup
eligibility unchanged. What comes around a ceremony (challenges, credentials, the signature
counter, sessions, audit) is the passkey service's. A refusal's text is the answer's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from authgate.domain.passkeys import NewCredential, Passkey, PasskeyUser, VerifiedAssertion


class ResponseMalformed(Exception):
    """The response cannot be decoded as this ceremony's (missing members, bad encodings,
    a member of the wrong type); ``detail`` says so for the person."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


class ResponseNotVerified(Exception):
    """The response was read but failed a check; ``reason`` names which (the type, the
    origin, the challenge, the RP ID, user presence or verification, a cross-origin frame,
    the signature, another credential, the credential id's length, the key's algorithm, the
    backup flags)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ReadAssertion(Protocol):
    """An authentication response as read, not yet verified: what finds its passkey. Only the
    relying party that read it verifies it."""

    @property
    def credential_id(self) -> bytes:
        """The credential that signed (``rawId``)."""
        ...

    @property
    def user_handle(self) -> bytes | None:
        """The user handle the authenticator returned, if any."""
        ...


class WebAuthnRelyingParty(Protocol):
    """One relying party (its RP ID, name and the origins whose pages may use it). Every
    method is synchronous and pure computation; options ask for a discoverable credential
    and user verification."""

    def creation_options(
        self, user: PasskeyUser, excluded: Sequence[Passkey], challenge: bytes
    ) -> dict[str, Any]:
        """The creation options (``PublicKeyCredentialCreationOptions``, JSON form, without
        ``timeout``) for ``user``: ``challenge``, no attestation asked, the passkeys in
        ``excluded`` named as credentials the authenticator must not register again."""
        ...

    def verify_registration(self, response: Mapping[str, Any], challenge: bytes) -> NewCredential:
        """The credential of a registration response (``PublicKeyCredential`` JSON) that
        answers ``challenge``; :class:`ResponseMalformed` or :class:`ResponseNotVerified`."""
        ...

    def request_options(self, challenge: bytes) -> dict[str, Any]:
        """The request options (``PublicKeyCredentialRequestOptions``, JSON form, without
        ``timeout``) for ``challenge``, with an empty ``allowCredentials``."""
        ...

    def read_assertion(self, response: Mapping[str, Any]) -> ReadAssertion:
        """Decode an authentication response (``PublicKeyCredential`` JSON);
        :class:`ResponseMalformed` when it cannot be."""
        ...

    def verify_assertion(
        self, assertion: ReadAssertion, challenge: bytes, passkey: Passkey
    ) -> VerifiedAssertion:
        """Verify an assertion this relying party read against ``challenge`` and the stored
        ``passkey`` (its public key and credential id); :class:`ResponseNotVerified`, or
        :class:`ResponseMalformed` when a member turns out to be of the wrong type. The
        signature counter is reported, not judged."""
        ...
