"""WebAuthn Level 3's JSON forms the passkey operations answer and read: the creation and
request options, the browser's credentials (``credential.toJSON()``), and the service's
answers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import attrs

from authgate.entrypoints.http.common.bodies import B, PasskeyInfo
from authgate.entrypoints.rest import wire_field
from authgate.entrypoints.rest.wire import wire_name


@attrs.frozen
class RelyingParty:
    """The relying party: this service (``rp``)."""

    id: str
    name: str


@attrs.frozen
class UserEntity:
    """The account a new credential is for (``user``)."""

    id: str
    name: str
    display_name: str = wire_field("displayName")


@attrs.frozen
class CredentialParameters:
    """A key algorithm the service accepts (``pubKeyCredParams``)."""

    type: str
    alg: int


@attrs.frozen
class CredentialDescriptor:
    """A credential named by its id (``excludeCredentials``, ``allowCredentials``)."""

    type: str
    id: str
    transports: list[str] | None = None


@attrs.frozen
class AuthenticatorSelection:
    """What the authenticator must offer (``authenticatorSelection``)."""

    resident_key: str = wire_field("residentKey")
    require_resident_key: bool = wire_field("requireResidentKey")
    user_verification: str = wire_field("userVerification")


@attrs.frozen
class CreationOptions:
    """``PublicKeyCredentialCreationOptionsJSON``."""

    rp: RelyingParty
    user: UserEntity
    challenge: str
    pub_key_cred_params: list[CredentialParameters] = wire_field("pubKeyCredParams")
    timeout: int = wire_field("timeout")
    exclude_credentials: list[CredentialDescriptor] = wire_field("excludeCredentials")
    authenticator_selection: AuthenticatorSelection = wire_field("authenticatorSelection")
    attestation: str = wire_field("attestation")


@attrs.frozen
class RequestOptions:
    """``PublicKeyCredentialRequestOptionsJSON``: ``allowCredentials`` empty (discoverable
    credentials: the browser offers the ones it holds)."""

    challenge: str
    timeout: int
    rp_id: str = wire_field("rpId")
    allow_credentials: list[CredentialDescriptor] = wire_field("allowCredentials")
    user_verification: str = wire_field("userVerification")


@attrs.frozen
class AttestationResponse:
    """``AuthenticatorAttestationResponseJSON`` (base64url members)."""

    client_data_json: str = wire_field("clientDataJSON")
    attestation_object: str = wire_field("attestationObject")
    transports: list[str] | None = None
    authenticator_data: str | None = wire_field("authenticatorData", default=None)
    public_key: str | None = wire_field("publicKey", default=None)
    public_key_algorithm: int | None = wire_field("publicKeyAlgorithm", default=None)


@attrs.frozen
class RegistrationCredential:
    """``RegistrationResponseJSON`` (``credential.toJSON()``), and the passkey's name."""

    id: str
    raw_id: str = wire_field("rawId")
    type: str = wire_field("type")
    response: AttestationResponse = wire_field("response")
    authenticator_attachment: str | None = wire_field("authenticatorAttachment", default=None)
    client_extension_results: dict[str, Any] | None = wire_field(
        "clientExtensionResults", default=None
    )
    name: str | None = None


@attrs.frozen
class AssertionResponse:
    """``AuthenticatorAssertionResponseJSON`` (base64url members)."""

    client_data_json: str = wire_field("clientDataJSON")
    authenticator_data: str = wire_field("authenticatorData")
    signature: str = wire_field("signature")
    user_handle: str | None = wire_field("userHandle", default=None)
    attestation_object: str | None = wire_field("attestationObject", default=None)


@attrs.frozen
class AuthenticationCredential:
    """``AuthenticationResponseJSON`` (``credential.toJSON()``), and where to go next."""

    id: str
    raw_id: str = wire_field("rawId")
    type: str = wire_field("type")
    response: AssertionResponse = wire_field("response")
    authenticator_attachment: str | None = wire_field("authenticatorAttachment", default=None)
    client_extension_results: dict[str, Any] | None = wire_field(
        "clientExtensionResults", default=None
    )
    return_to: str | None = wire_field("returnTo", default=None)


@attrs.frozen
class PasskeySignIn:
    """A passkey sign-in's answer (the session token is in the cookie only, as after a
    provider's callback): whose account, and where the browser goes next."""

    account_id: str = wire_field("accountId")
    redirect_to: str = wire_field("redirectTo")
    session_expires_at: dt.datetime = wire_field("sessionExpiresAt")


@attrs.frozen
class PasskeyList:
    """The caller's passkeys, oldest first."""

    passkeys: list[PasskeyInfo]


@attrs.frozen
class PasskeyRename:
    """A passkey's new name."""

    name: str


def _of(body: type[B], members: Mapping[str, Any]) -> B:
    """``body`` from the JSON members of the same wire names (any other left out)."""
    return body(**{a.name: members.get(wire_name(a)) for a in attrs.fields(body)})


def _descriptors(listed: Any) -> list[CredentialDescriptor]:
    return [_of(CredentialDescriptor, d) for d in listed or []]


def creation_options(o: dict[str, Any]) -> CreationOptions:
    """The service's creation options (their JSON form) as the typed body."""
    return CreationOptions(
        rp=_of(RelyingParty, o["rp"]),
        user=_of(UserEntity, o["user"]),
        challenge=o["challenge"],
        pub_key_cred_params=[_of(CredentialParameters, p) for p in o["pubKeyCredParams"]],
        timeout=o["timeout"],
        exclude_credentials=_descriptors(o.get("excludeCredentials")),
        authenticator_selection=_of(AuthenticatorSelection, o["authenticatorSelection"]),
        attestation=o["attestation"],
    )


def request_options(o: dict[str, Any]) -> RequestOptions:
    """The service's request options (their JSON form) as the typed body."""
    return _of(RequestOptions, {**o, "allowCredentials": _descriptors(o.get("allowCredentials"))})


def response_json(body: RegistrationCredential | AuthenticationCredential) -> dict[str, Any]:
    """The credential as the browser sent it (its JSON members), for the library."""
    answer = body.response
    members = {wire_name(a): getattr(answer, a.name) for a in attrs.fields(type(answer))}
    sent: dict[str, Any] = {"id": body.id, "rawId": body.raw_id, "type": body.type}
    sent["response"] = {k: v for k, v in members.items() if v is not None}
    sent["clientExtensionResults"] = body.client_extension_results or {}
    if body.authenticator_attachment:
        sent["authenticatorAttachment"] = body.authenticator_attachment
    return sent
