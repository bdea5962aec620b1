"""Passkeys over HTTP: the WebAuthn ceremonies and the account's passkeys. Every ceremony request
is counted against ``ratelimit.passkeys`` first; a challenge belongs to the browser that asked
(the binding cookie) and to its ceremony."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import attrs
from aiohttp import web

from authgate.domain import errors
from authgate.domain.passkeys import NAME_MAX
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.account_area import (
    MANAGE,
    NO_STORE,
    READ,
    AccountArea,
    principal_of,
)
from authgate.entrypoints.http.common.binding import BINDING_COOKIE, binding_of
from authgate.entrypoints.http.common.bodies import B, PasskeyInfo, app_errors
from authgate.entrypoints.http.common.caller import admit
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.common.session_auth import SESSION_COOKIE
from authgate.entrypoints.rest import Call, Cookie, Reply, path, pattern, wire_field
from authgate.entrypoints.rest.wire import wire_name
from authgate.ports.ratelimit import RateLimiter
from authgate.services.passkeys import PasskeyService

# WebAuthn Level 3's JSON forms: the creation and request options, the browser's credentials
# (``credential.toJSON()``), and the service's answers.


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


_WIRE_NAMES: dict[type, tuple[tuple[str, str], ...]] = {}


def _wire_names(body: type) -> tuple[tuple[str, str], ...]:
    """``body``'s (attribute, wire name) pairs, read once per class (every ceremony uses them)."""
    names = _WIRE_NAMES.get(body)
    if names is None:
        names = _WIRE_NAMES[body] = tuple((a.name, wire_name(a)) for a in attrs.fields(body))
    return names


def _of(body: type[B], members: Mapping[str, Any]) -> B:
    """``body`` from the JSON members of the same wire names (any other left out)."""
    return body(**{name: members.get(wire) for name, wire in _wire_names(body)})


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
    members = {wire: getattr(answer, name) for name, wire in _wire_names(type(answer))}
    sent: dict[str, Any] = {"id": body.id, "rawId": body.raw_id, "type": body.type}
    sent["response"] = {k: v for k, v in members.items() if v is not None}
    sent["clientExtensionResults"] = body.client_extension_results or {}
    if body.authenticator_attachment:
        sent["authenticatorAttachment"] = body.authenticator_attachment
    return sent


TOO_MANY = "too many passkey requests; retry later"
LIMITED = docs.rate_limited_example(TOO_MANY)


def answer_refusals(ceremony: str) -> tuple[Exception, ...]:
    """What the browser's answer to a ceremony is refused for, whatever its account."""
    return (
        errors.InvalidPasskeyChallenge("example"),
        errors.InvalidPasskeyResponse(f"it cannot be decoded as a WebAuthn {ceremony} response"),
        errors.PasskeyNotVerified("the origin is not one of this service's"),
    )


PASSKEY_ID = path(
    "id",
    pattern(r"^[0-9a-f]{32}$"),
    description="The id of one of the caller's passkeys, as GET /v1/account/passkeys lists it.",
)


@attrs.define(slots=False, eq=False)
class PasskeyOperations(AccountArea):
    """Registers the passkey operations on an API."""

    tag = docs.PASSKEYS

    service: PasskeyService = attrs.field(kw_only=True)
    limiter: RateLimiter = attrs.field(kw_only=True)
    binding_max_age: int = attrs.field(kw_only=True)

    async def _limit(self, request: web.Request, address: str | None = None) -> None:
        """Before any work: each options request stores a challenge. ``address``: the
        client's, when read already."""
        key = self.client_address.limit_key(address or self.client_address.of(request))
        await admit(self.limiter, key, self.service.metrics, "passkeys", TOO_MANY)

    @operation(
        "POST",
        "/v1/account/passkeys/registration/options",
        response=CreationOptions,
        security=MANAGE,
        responses=app_errors(401, 403, 404, 429, 503),
        operation_id="passkey_registration_options",
        summary="Start adding a passkey",
        description="WebAuthn creation options for the caller's account (discoverable "
        "credential, user verification required, attestation none; the account's passkeys "
        "excluded). Their challenge lives 5 minutes and is kept for this browser (the "
        "binding cookie, set when absent) and this ceremony. Needs a recent sign-in.",
        refusals=(
            *docs.CHANGE_REFUSALS,
            errors.AccountGone(),
            LIMITED,
            errors.TemporarilyUnavailable(),
        ),
    )
    async def registration_options(self, call: Call[None]) -> Reply[CreationOptions]:
        caller = self._caller(call, change=True)
        await self._limit(call.request)
        binding, cookies = binding_of(call.request, self.binding_max_age)
        options = await self.service.registration_options(caller, binding)
        return Reply(creation_options(options), headers=NO_STORE, cookies=cookies)

    @operation(
        "POST",
        "/v1/account/passkeys/registration",
        request=RegistrationCredential,
        response=PasskeyInfo,
        status=201,
        security=MANAGE,
        responses=app_errors(401, 403, 404, 409, 429),
        operation_id="register_passkey",
        summary="Add a passkey",
        description="The browser's answer to the creation options (credential.toJSON(), "
        f"with an optional name of at most {NAME_MAX} characters): verified (type, "
        "challenge, origin, RP ID, user presence and verification, a key of an offered "
        "algorithm, a credential id of at most 1,023 bytes, no backup state without backup "
        "eligibility) and kept. Ends no session; audited. Needs a recent sign-in.",
        refusals=(
            *answer_refusals("registration"),
            *docs.CHANGE_REFUSALS,
            errors.AccountGone(),
            errors.PasskeyAlreadyRegistered(),
            LIMITED,
        ),
    )
    async def register_passkey(self, call: Call[RegistrationCredential]) -> Reply[PasskeyInfo]:
        caller = self._caller(call, change=True)
        await self._limit(call.request)
        body = call.body
        passkey = await self.service.register(
            caller, call.request.cookies.get(BINDING_COOKIE), response_json(body), body.name
        )
        return Reply(PasskeyInfo.of(passkey), status=201, headers=NO_STORE)

    @operation(
        "POST",
        "/v1/passkeys/authentication/options",
        response=RequestOptions,
        responses=app_errors(429, 503),
        operation_id="passkey_authentication_options",
        summary="Start signing in with a passkey",
        description="WebAuthn request options with an empty allowCredentials (the browser "
        "offers the passkeys it holds, also through autofill), user verification required. "
        "Their challenge lives 5 minutes and is kept for this browser (the binding cookie, "
        "set when absent) and this ceremony.",
        refusals=(LIMITED, errors.TemporarilyUnavailable()),
    )
    async def authentication_options(self, call: Call[None]) -> Reply[RequestOptions]:
        await self._limit(call.request)
        binding, cookies = binding_of(call.request, self.binding_max_age)
        options = await self.service.authentication_options(binding)
        return Reply(request_options(options), headers=NO_STORE, cookies=cookies)

    @operation(
        "POST",
        "/v1/passkeys/authentication",
        request=AuthenticationCredential,
        response=PasskeySignIn,
        responses=app_errors(401, 403, 429),
        operation_id="sign_in_with_passkey",
        summary="Sign in with a passkey",
        description="The browser's answer to the request options (credential.toJSON(), "
        "with an optional returnTo): verified against this browser's challenge (type, "
        "origin, RP ID, user presence and verification, signature, counter, the user "
        "handle of the passkey's account, the backup flags) and the "
        "passkey's account signed in: the session cookie is set, as after a provider's "
        "callback, and redirectTo says where to go (returnTo under the same rules as a "
        "provider sign-in's). The session's auth_time is now, so it counts as a recent "
        "sign-in.",
        refusals=(
            *answer_refusals("authentication"),
            errors.UnknownPasskey(),
            errors.AccountDisabled("account-disabled"),
            LIMITED,
        ),
    )
    async def authenticate(self, call: Call[AuthenticationCredential]) -> Reply[PasskeySignIn]:
        request = call.request
        address = self.client_address.of(request)
        await self._limit(request, address)
        signed_in = await self.service.authenticate(
            request.cookies.get(BINDING_COOKIE),
            response_json(call.body),
            self.client_address.client(request, address),
            call.body.return_to,
            held_session=request.cookies.get(SESSION_COOKIE),
        )
        answer = PasskeySignIn(
            account_id=signed_in.account_id,
            redirect_to=signed_in.destination,
            session_expires_at=signed_in.session.expires_at,
        )
        session = Cookie(SESSION_COOKIE, signed_in.session.token, max_age=signed_in.session_max_age)
        return Reply(answer, headers=NO_STORE, cookies=(session,))

    @operation(
        "GET",
        "/v1/account/passkeys",
        response=PasskeyList,
        security=READ,
        operation_id="list_passkeys",
        summary="List passkeys",
        description="The caller's passkeys: name, when added (by which session, from which "
        "address and browser) and last used, whether backed up (synced), oldest first.",
        refusals=docs.READ_REFUSALS,
    )
    async def list_passkeys(self, call: Call[None]) -> Reply[PasskeyList]:
        listed = await self.service.list(principal_of(call).subject)
        return Reply(PasskeyList([PasskeyInfo.of(p) for p in listed]), headers=NO_STORE)

    @operation(
        "PATCH",
        "/v1/account/passkeys/{id}",
        params=[PASSKEY_ID],
        request=PasskeyRename,
        response=PasskeyInfo,
        security=MANAGE,
        responses=app_errors(401, 403, 404),
        operation_id="rename_passkey",
        summary="Rename a passkey",
        description=f"Gives one of the caller's passkeys a name (1 to {NAME_MAX} "
        "characters, no control characters).",
        refusals=(
            errors.InvalidPasskeyName(NAME_MAX),
            docs.NO_CREDENTIAL,
            docs.MANAGE_SCOPE,
            docs.CROSS_SITE,
            errors.PasskeyNotFound(),
        ),
    )
    async def rename_passkey(self, call: Call[PasskeyRename]) -> Reply[PasskeyInfo]:
        caller = self._caller(call, change=True)
        renamed = await self.service.rename(caller, call.path["id"], call.body.name)
        return Reply(PasskeyInfo.of(renamed), headers=NO_STORE)

    @operation(
        "DELETE",
        "/v1/account/passkeys/{id}",
        params=[PASSKEY_ID],
        status=204,
        security=MANAGE,
        responses={204: "The passkey is removed", **app_errors(401, 403, 404, 409)},
        operation_id="remove_passkey",
        summary="Remove a passkey",
        description="Removes one of the caller's passkeys: it no longer signs in, and the "
        "sessions it signed in end (but the caller's own), as unlinking a provider ends "
        "its sessions. The account's last sign-in method (providers and passkeys together) "
        "cannot be removed. Audited. Needs a recent sign-in.",
        refusals=(*docs.CHANGE_REFUSALS, errors.PasskeyNotFound(), errors.LastSignInMethod()),
    )
    async def remove_passkey(self, call: Call[None]) -> Reply[None]:
        caller = self._caller(call, change=True)
        await self.service.remove(caller, call.path["id"])
        return Reply(None, status=204, headers=NO_STORE)
