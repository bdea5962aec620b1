"""The WebAuthn ceremonies on fido2's ``Fido2Server``, imported on the first ceremony.

fido2 raises :class:`ValueError` for a check that fails, with its own English text, which
:data:`_REASONS` turns into the answer's reasons. Anything else it raises while decoding or
checking a response (a member of an odd type) is malformed input.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import attrs
from fido2 import cbor
from fido2.cose import CoseKey
from fido2.server import Fido2Server
from fido2.webauthn import (
    AttestationConveyancePreference,
    AttestedCredentialData,
    AuthenticationResponse,
    AuthenticatorData,
    AuthenticatorTransport,
    PublicKeyCredentialDescriptor,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialType,
    PublicKeyCredentialUserEntity,
    RegistrationResponse,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from authgate.domain.passkeys import NewCredential, Passkey, PasskeyUser, VerifiedAssertion
from authgate.ports.webauthn import ReadAssertion, ResponseMalformed, ResponseNotVerified

T = TypeVar("T")

_KNOWN_TRANSPORTS = frozenset(t.value for t in AuthenticatorTransport)

# fido2's refusals (ValueError texts) and what the answer says of each.
_REASONS = (
    ("Incorrect type", "the response is not of this ceremony (clientDataJSON type)"),
    ("Invalid origin", "the origin is not one of this service's"),
    ("Wrong challenge", "the response answers another challenge"),
    ("Wrong RP ID hash", "the response is for another relying party (RP ID)"),
    ("User Present", "the user was not present"),
    ("User verification required", "the user was not verified"),
    ("user verified flag", "the user was not verified"),
    ("Invalid signature", "the signature does not verify"),
    ("Unknown credential", "the response names another credential"),
)

CREDENTIAL_ID_MAX = 1023
"""The longest credential id a relying party keeps (WebAuthn 7.1: longer ones are refused)."""


@attrs.frozen
class Fido2Assertion:
    """:class:`~authgate.ports.webauthn.ReadAssertion`: fido2's reading of the response,
    verified later without decoding it again."""

    response: AuthenticationResponse

    @property
    def credential_id(self) -> bytes:
        return bytes(self.response.raw_id)

    @property
    def user_handle(self) -> bytes | None:
        handle = self.response.response.user_handle
        return None if handle is None else bytes(handle)


class Fido2Ceremonies:
    """The ceremonies of one relying party on a ``Fido2Server`` (attestation ``none``)."""

    def __init__(self, rp_id: str, rp_name: str, origin_allowed: Callable[[object], bool]) -> None:
        self._server = Fido2Server(
            PublicKeyCredentialRpEntity(name=rp_name, id=rp_id),
            attestation=AttestationConveyancePreference.NONE,
            verify_origin=origin_allowed,
        )

    def creation_options(
        self, user: PasskeyUser, excluded: Sequence[Passkey], challenge: bytes
    ) -> dict[str, Any]:
        options, _ = self._server.register_begin(
            PublicKeyCredentialUserEntity(
                id=user.handle, name=user.name, display_name=user.display_name
            ),
            credentials=[_descriptor(p) for p in excluded],
            resident_key_requirement=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.REQUIRED,
            challenge=challenge,
        )
        return {**options.public_key}

    def verify_registration(self, response: Mapping[str, Any], challenge: bytes) -> NewCredential:
        try:
            registration = RegistrationResponse.from_dict(response)
            attested = registration.response.attestation_object.auth_data
        except Exception as e:  # fido2 raises what its decoding meets: all are malformed input
            raise ResponseMalformed(
                "it cannot be decoded as a WebAuthn registration response"
            ) from e
        if attested.credential_data is None:
            raise ResponseNotVerified("the authenticator data holds no credential")
        # The state a completion checks against holds the challenge and the user verification
        # asked for, nothing of the user.
        _, state = self._server.register_begin(
            PublicKeyCredentialUserEntity(id=b"-", name="-"),
            user_verification=UserVerificationRequirement.REQUIRED,
            challenge=challenge,
        )
        _refuse_cross_origin(registration.response.client_data.cross_origin)
        auth_data = _checked(lambda: self._server.register_complete(state, registration))
        credential = auth_data.credential_data
        assert credential is not None  # checked above
        # The steps of WebAuthn's registration (7.1) that fido2 leaves to its caller.
        if len(credential.credential_id) > CREDENTIAL_ID_MAX:
            raise ResponseNotVerified("the credential id is longer than 1,023 bytes")
        offered = {p.alg for p in self._server.allowed_algorithms}
        if credential.public_key.get(3) not in offered:
            raise ResponseNotVerified("the credential's algorithm is not one that was offered")
        _refuse_backup_state_without_eligibility(auth_data)
        return NewCredential(
            credential_id=bytes(credential.credential_id),
            public_key=cbor.encode(dict(credential.public_key)),
            sign_count=auth_data.counter,
            aaguid=str(credential.aaguid),
            backup_eligible=auth_data.is_backup_eligible(),
            backed_up=auth_data.is_backed_up(),
            transports=_transports(response),
        )

    def request_options(self, challenge: bytes) -> dict[str, Any]:
        options, _ = self._server.authenticate_begin(
            credentials=[],
            user_verification=UserVerificationRequirement.REQUIRED,
            challenge=challenge,
        )
        return {**options.public_key}

    def read_assertion(self, response: Mapping[str, Any]) -> Fido2Assertion:
        try:
            assertion = AuthenticationResponse.from_dict(response)
        except Exception as e:  # fido2 raises what its decoding meets: all are malformed input
            raise ResponseMalformed(
                "it cannot be decoded as a WebAuthn authentication response"
            ) from e
        return Fido2Assertion(assertion)

    def verify_assertion(
        self, assertion: ReadAssertion, challenge: bytes, passkey: Passkey
    ) -> VerifiedAssertion:
        if not isinstance(assertion, Fido2Assertion):
            raise TypeError("an assertion this relying party did not read")
        read = assertion.response
        _, state = self._server.authenticate_begin(
            user_verification=UserVerificationRequirement.REQUIRED, challenge=challenge
        )
        _refuse_cross_origin(read.response.client_data.cross_origin)
        _checked(lambda: self._server.authenticate_complete(state, [_attested(passkey)], read))
        auth_data = read.response.authenticator_data
        # The steps of WebAuthn's authentication (7.2) that fido2 leaves to its caller.
        _refuse_backup_state_without_eligibility(auth_data)
        if auth_data.is_backup_eligible() != passkey.backup_eligible:
            raise ResponseNotVerified("the backup eligibility is not the passkey's")
        return VerifiedAssertion(sign_count=auth_data.counter, backed_up=auth_data.is_backed_up())


def _refuse_backup_state_without_eligibility(auth_data: AuthenticatorData) -> None:
    """BS (backed up) set while BE (may be backed up) is not: no authenticator reports it."""
    if auth_data.is_backed_up() and not auth_data.is_backup_eligible():
        raise ResponseNotVerified("the backup state is set without backup eligibility")


def _refuse_cross_origin(cross_origin: object) -> None:
    """The ceremony ran in a frame of another origin: authgate's pages are never framed."""
    if cross_origin:
        raise ResponseNotVerified("the ceremony ran in a cross-origin frame")


def _descriptor(passkey: Passkey) -> PublicKeyCredentialDescriptor:
    return PublicKeyCredentialDescriptor(
        type=PublicKeyCredentialType.PUBLIC_KEY,
        id=passkey.credential_id,
        transports=[AuthenticatorTransport(t) for t in passkey.transports] or None,
    )


def _attested(passkey: Passkey) -> AttestedCredentialData:
    return AttestedCredentialData.create(
        bytes(uuid.UUID(passkey.aaguid).bytes),
        passkey.credential_id,
        CoseKey.parse(cast(Mapping[int, Any], cbor.decode(passkey.public_key))),
    )


def _transports(response: Mapping[str, Any]) -> tuple[str, ...]:
    """The transports the browser reported (``response.transports``), the known ones only."""
    inner = response.get("response")
    listed = inner.get("transports") if isinstance(inner, Mapping) else None
    if not isinstance(listed, Sequence) or isinstance(listed, str):
        return ()
    known = [t for t in listed if isinstance(t, str) and t in _KNOWN_TRANSPORTS]
    return tuple(dict.fromkeys(known))[:8]


def _checked(complete: Callable[[], T]) -> T:
    """fido2's completion of a ceremony (module text: what its errors mean)."""
    try:
        return complete()
    except ValueError as e:
        text = str(e)
        reason = next((r for marker, r in _REASONS if marker in text), None)
        raise ResponseNotVerified(reason or "the response failed verification") from e
    except Exception as e:  # a member of an odd type met in the checks: malformed
        raise ResponseMalformed("a member has the wrong type") from e
