"""Passkeys over HTTP: the WebAuthn ceremonies and the account's passkeys.

* ``POST /v1/account/passkeys/registration/options`` and ``POST
  /v1/account/passkeys/registration``: add a passkey to the signed-in account (scope
  ``account:manage``, a recent sign-in, the same-origin guard with the cookie).
* ``POST /v1/passkeys/authentication/options`` and ``POST /v1/passkeys/authentication``: sign
  in with one; the answer sets the session cookie, as a provider's callback does.
* ``GET /v1/account/passkeys``, ``PATCH /v1/account/passkeys/{id}`` (rename), ``DELETE
  /v1/account/passkeys/{id}`` (a recent sign-in; ends the sessions the passkey signed in).

The options and responses are WebAuthn Level 3's JSON forms (``PublicKeyCredential``'s
``parseCreationOptionsFromJSON``, ``toJSON()``). Every ceremony request is counted against
``ratelimit.passkeys`` per client before any work. A challenge belongs to the browser that
asked (the binding cookie, set here when absent) and to its ceremony.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs
from aiohttp import web

from authgate.domain import errors
from authgate.domain.model import ClientInfo
from authgate.domain.passkeys import NAME_MAX
from authgate.domain.scopes import ACCOUNT_MANAGE, READ_SCOPES
from authgate.domain.secrets import new_secret
from authgate.entrypoints.http.account import AccountArea, passkey_info
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import AppError, PasskeyInfo
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.errors import rate_limited
from authgate.entrypoints.http.common.session_auth import SESSION_COOKIE, SameOriginGuard
from authgate.entrypoints.http.signin import BINDING_COOKIE, BINDING_FORMAT, BINDING_PATH
from authgate.entrypoints.rest import (
    Api,
    ApiKey,
    BearerJWT,
    Call,
    Cookie,
    Cors,
    Reply,
    path,
    pattern,
    wire_field,
)
from authgate.entrypoints.rest.wire import wire_name
from authgate.ports.ratelimit import RateLimiter
from authgate.services.passkeys import PasskeyService

NO_STORE = {"Cache-Control": "no-store"}
PASSKEYS = "passkeys"
_TAG = (
    "Passkeys (WebAuthn): a sign-in method of an account beside its providers — adding one, "
    "signing in with one, listing, renaming and removing them."
)

# -- bodies: WebAuthn Level 3's JSON forms --------------------------------------------------


@attrs.frozen
class RelyingParty:
    id: str
    name: str


@attrs.frozen
class UserEntity:
    id: str
    name: str
    display_name: str = wire_field("displayName")


@attrs.frozen
class CredentialParameters:
    type: str
    alg: int


@attrs.frozen
class CredentialDescriptor:
    type: str
    id: str
    transports: list[str] | None = None


@attrs.frozen
class AuthenticatorSelection:
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
    passkeys: list[PasskeyInfo]


@attrs.frozen
class PasskeyRename:
    name: str


def _descriptors(listed: Any) -> list[CredentialDescriptor]:
    return [
        CredentialDescriptor(type=d["type"], id=d["id"], transports=d.get("transports"))
        for d in listed or []
    ]


def creation_options(o: dict[str, Any]) -> CreationOptions:
    selection = o["authenticatorSelection"]
    return CreationOptions(
        rp=RelyingParty(id=o["rp"]["id"], name=o["rp"]["name"]),
        user=UserEntity(
            id=o["user"]["id"], name=o["user"]["name"], display_name=o["user"]["displayName"]
        ),
        challenge=o["challenge"],
        pub_key_cred_params=[
            CredentialParameters(type=p["type"], alg=p["alg"]) for p in o["pubKeyCredParams"]
        ],
        timeout=o["timeout"],
        exclude_credentials=_descriptors(o.get("excludeCredentials")),
        authenticator_selection=AuthenticatorSelection(
            resident_key=selection["residentKey"],
            require_resident_key=selection["requireResidentKey"],
            user_verification=selection["userVerification"],
        ),
        attestation=o["attestation"],
    )


def request_options(o: dict[str, Any]) -> RequestOptions:
    return RequestOptions(
        challenge=o["challenge"],
        timeout=o["timeout"],
        rp_id=o["rpId"],
        allow_credentials=_descriptors(o.get("allowCredentials")),
        user_verification=o["userVerification"],
    )


def _response_json(body: RegistrationCredential | AuthenticationCredential) -> dict[str, Any]:
    """The credential as the browser sent it (its JSON members), for the library."""
    inner = {
        _wire(type(body.response), name): value
        for name, value in attrs.asdict(body.response).items()
        if value is not None
    }
    return {
        "id": body.id,
        "rawId": body.raw_id,
        "type": body.type,
        "response": inner,
        "clientExtensionResults": body.client_extension_results or {},
        **(
            {"authenticatorAttachment": body.authenticator_attachment}
            if body.authenticator_attachment
            else {}
        ),
    }


def _wire(cls: type, name: str) -> str:
    return wire_name(attrs.fields_dict(cls)[name])


class PasskeyOperations(AccountArea):
    """Registers the passkey operations on an API."""

    def __init__(
        self,
        service: PasskeyService,
        bearer: BearerJWT,
        cookie: ApiKey,
        guard: SameOriginGuard,
        client_address: ClientAddress,
        limiter: RateLimiter,
        binding_max_age: int,
        cors: Cors | None = None,
    ) -> None:
        super().__init__(bearer, cookie, guard, client_address, cors)
        self.service = service
        self.limiter = limiter
        self.binding_max_age = binding_max_age

    def register(self, api: Api) -> None:
        api.describe_tag(PASSKEYS, _TAG)
        manage_scope = docs.insufficient_scope(ACCOUNT_MANAGE)
        read_scope = docs.insufficient_scope(*READ_SCOPES)
        limited = docs.rate_limited_example("too many passkey requests; retry later")
        challenge = errors.InvalidPasskeyChallenge("example")
        malformed = errors.InvalidPasskeyResponse(
            "it cannot be decoded as a WebAuthn authentication response"
        )
        not_verified = errors.PasskeyNotVerified("the origin is not one of this service's")
        passkey_id = path(
            "id",
            pattern(r"^[0-9a-f]{32}$"),
            description="The id of one of the caller's passkeys, as GET /v1/account/passkeys "
            "lists it.",
        )
        api.operation(
            "POST",
            "/v1/account/passkeys/registration/options",
            response=CreationOptions,
            security=self.manage,
            responses={401: AppError, 403: AppError, 404: AppError, 429: AppError, 503: AppError},
            operation_id="passkey_registration_options",
            tags=(PASSKEYS,),
            summary="Start adding a passkey",
            description="WebAuthn creation options for the caller's account (discoverable "
            "credential, user verification required, attestation none; the account's passkeys "
            "excluded). Their challenge lives 5 minutes and is kept for this browser (the "
            "binding cookie, set when absent) and this ceremony. Needs a recent sign-in.",
            examples=docs.error_examples(
                docs.NO_CREDENTIAL,
                docs.STEP_UP,
                manage_scope,
                docs.CROSS_SITE,
                errors.AccountGone(),
                limited,
                errors.TemporarilyUnavailable(),
            ),
            cors=self.cors,
        )(self.registration_options)
        api.operation(
            "POST",
            "/v1/account/passkeys/registration",
            request=RegistrationCredential,
            response=PasskeyInfo,
            status=201,
            security=self.manage,
            responses={
                401: AppError,
                403: AppError,
                404: AppError,
                409: AppError,
                429: AppError,
            },
            operation_id="register_passkey",
            tags=(PASSKEYS,),
            summary="Add a passkey",
            description="The browser's answer to the creation options (credential.toJSON(), "
            f"with an optional name of at most {NAME_MAX} characters): verified (type, "
            "challenge, origin, RP ID, user presence and verification, a key of an offered "
            "algorithm, a credential id of at most 1,023 bytes, no backup state without backup "
            "eligibility) and kept. Ends no session; audited. Needs a recent sign-in.",
            examples=docs.error_examples(
                challenge,
                errors.InvalidPasskeyResponse(
                    "it cannot be decoded as a WebAuthn registration response"
                ),
                not_verified,
                docs.NO_CREDENTIAL,
                docs.STEP_UP,
                manage_scope,
                docs.CROSS_SITE,
                errors.AccountGone(),
                errors.PasskeyAlreadyRegistered(),
                limited,
            ),
            cors=self.cors,
        )(self.register_passkey)
        api.operation(
            "POST",
            "/v1/passkeys/authentication/options",
            response=RequestOptions,
            responses={429: AppError, 503: AppError},
            operation_id="passkey_authentication_options",
            tags=(PASSKEYS,),
            summary="Start signing in with a passkey",
            description="WebAuthn request options with an empty allowCredentials (the browser "
            "offers the passkeys it holds, also through autofill), user verification required. "
            "Their challenge lives 5 minutes and is kept for this browser (the binding cookie, "
            "set when absent) and this ceremony.",
            examples=docs.error_examples(limited, errors.TemporarilyUnavailable()),
            cors=self.cors,
        )(self.authentication_options)
        api.operation(
            "POST",
            "/v1/passkeys/authentication",
            request=AuthenticationCredential,
            response=PasskeySignIn,
            responses={401: AppError, 403: AppError, 429: AppError},
            operation_id="sign_in_with_passkey",
            tags=(PASSKEYS,),
            summary="Sign in with a passkey",
            description="The browser's answer to the request options (credential.toJSON(), "
            "with an optional returnTo): verified against this browser's challenge (type, "
            "origin, RP ID, user presence and verification, signature, counter, the user "
            "handle of the passkey's account, the backup flags) and the "
            "passkey's account signed in: the session cookie is set, as after a provider's "
            "callback, and redirectTo says where to go (returnTo under the same rules as a "
            "provider sign-in's). The session's auth_time is now, so it counts as a recent "
            "sign-in.",
            examples=docs.error_examples(
                challenge,
                malformed,
                not_verified,
                errors.UnknownPasskey(),
                errors.AccountDisabled("account-disabled"),
                limited,
            ),
            cors=self.cors,
        )(self.authenticate)
        api.operation(
            "GET",
            "/v1/account/passkeys",
            response=PasskeyList,
            security=self.read,
            operation_id="list_passkeys",
            tags=(PASSKEYS,),
            summary="List passkeys",
            description="The caller's passkeys: name, when added (by which session, from which "
            "address and browser) and last used, whether backed up (synced), oldest first.",
            examples=docs.error_examples(docs.NO_CREDENTIAL, read_scope),
            cors=self.cors,
        )(self.list_passkeys)
        api.operation(
            "PATCH",
            "/v1/account/passkeys/{id}",
            params=[passkey_id],
            request=PasskeyRename,
            response=PasskeyInfo,
            security=self.manage,
            responses={401: AppError, 403: AppError, 404: AppError},
            operation_id="rename_passkey",
            tags=(PASSKEYS,),
            summary="Rename a passkey",
            description=f"Gives one of the caller's passkeys a name (1 to {NAME_MAX} "
            "characters, no control characters).",
            examples=docs.error_examples(
                errors.InvalidPasskeyName(NAME_MAX),
                docs.NO_CREDENTIAL,
                manage_scope,
                docs.CROSS_SITE,
                errors.PasskeyNotFound(),
            ),
            cors=self.cors,
        )(self.rename_passkey)
        api.operation(
            "DELETE",
            "/v1/account/passkeys/{id}",
            params=[passkey_id],
            status=204,
            security=self.manage,
            responses={
                204: "The passkey is removed",
                401: AppError,
                403: AppError,
                404: AppError,
                409: AppError,
            },
            operation_id="remove_passkey",
            tags=(PASSKEYS,),
            summary="Remove a passkey",
            description="Removes one of the caller's passkeys: it no longer signs in, and the "
            "sessions it signed in end (but the caller's own), as unlinking a provider ends "
            "its sessions. The account's last sign-in method (providers and passkeys together) "
            "cannot be removed. Audited. Needs a recent sign-in.",
            examples=docs.error_examples(
                docs.NO_CREDENTIAL,
                docs.STEP_UP,
                manage_scope,
                docs.CROSS_SITE,
                errors.PasskeyNotFound(),
                errors.LastSignInMethod(),
            ),
            cors=self.cors,
        )(self.remove_passkey)

    # -- the ceremonies ---------------------------------------------------------------------

    async def _limit(self, request: web.Request) -> None:
        """Before any work: each options request stores a challenge (docs/security.md, "Rate
        limits")."""
        client = self.client_address.limit_key(self.client_address.of(request))
        decision = await self.limiter.hit(client)
        if not decision.allowed:
            self.service.metrics.rate_limited("passkeys")
            raise rate_limited(decision, "too many passkey requests; retry later")

    def _binding(self, request: web.Request) -> tuple[str, tuple[Cookie, ...]]:
        """The browser's binding cookie, or a new one (and its ``Set-Cookie``)."""
        binding = request.cookies.get(BINDING_COOKIE, "")
        if BINDING_FORMAT.match(binding):
            return binding, ()
        binding = new_secret()
        cookie = Cookie(
            BINDING_COOKIE,
            binding,
            max_age=self.binding_max_age,
            path=BINDING_PATH,
            samesite="None",
        )
        return binding, (cookie,)

    async def registration_options(self, call: Call[None]) -> Reply[CreationOptions]:
        caller = self._caller(call, change=True)
        await self._limit(call.request)
        binding, cookies = self._binding(call.request)
        options = await self.service.registration_options(caller, binding)
        return Reply(creation_options(options), headers=NO_STORE, cookies=cookies)

    async def register_passkey(self, call: Call[RegistrationCredential]) -> Reply[PasskeyInfo]:
        caller = self._caller(call, change=True)
        await self._limit(call.request)
        body = call.body
        passkey = await self.service.register(
            caller, call.request.cookies.get(BINDING_COOKIE), _response_json(body), body.name
        )
        return Reply(passkey_info(passkey), status=201, headers=NO_STORE)

    async def authentication_options(self, call: Call[None]) -> Reply[RequestOptions]:
        await self._limit(call.request)
        binding, cookies = self._binding(call.request)
        options = await self.service.authentication_options(binding)
        return Reply(request_options(options), headers=NO_STORE, cookies=cookies)

    async def authenticate(self, call: Call[AuthenticationCredential]) -> Reply[PasskeySignIn]:
        request = call.request
        await self._limit(request)
        body = call.body
        signed_in = await self.service.authenticate(
            request.cookies.get(BINDING_COOKIE),
            _response_json(body),
            ClientInfo(self.client_address.of(request), request.headers.get("User-Agent")),
            body.return_to,
            held_session=request.cookies.get(SESSION_COOKIE),
        )
        answer = PasskeySignIn(
            account_id=signed_in.account_id,
            redirect_to=signed_in.destination,
            session_expires_at=signed_in.session.expires_at,
        )
        session = Cookie(SESSION_COOKIE, signed_in.session.token, max_age=signed_in.session_max_age)
        return Reply(answer, headers=NO_STORE, cookies=(session,))

    # -- the account's passkeys -------------------------------------------------------------

    async def list_passkeys(self, call: Call[None]) -> Reply[PasskeyList]:
        assert call.principal is not None
        listed = await self.service.list(call.principal.subject)
        return Reply(PasskeyList([passkey_info(p) for p in listed]), headers=NO_STORE)

    async def rename_passkey(self, call: Call[PasskeyRename]) -> Reply[PasskeyInfo]:
        caller = self._caller(call, change=True)
        renamed = await self.service.rename(caller, call.path["id"], call.body.name)
        return Reply(passkey_info(renamed), headers=NO_STORE)

    async def remove_passkey(self, call: Call[None]) -> Reply[None]:
        caller = self._caller(call, change=True)
        await self.service.remove(caller, call.path["id"])
        return Reply(None, status=204, headers=NO_STORE)
