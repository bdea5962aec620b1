"""Passkeys over HTTP: the WebAuthn ceremonies and the account's passkeys. Every ceremony request
is counted against ``ratelimit.passkeys`` first; a challenge belongs to the browser that asked
(the binding cookie) and to its ceremony."""

from __future__ import annotations

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
from authgate.entrypoints.http.common.bodies import PasskeyInfo, app_errors
from authgate.entrypoints.http.common.caller import ClientAddress, admit
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.common.session_auth import SESSION_COOKIE, SameOriginGuard
from authgate.entrypoints.http.webauthn import (
    AuthenticationCredential,
    CreationOptions,
    PasskeyList,
    PasskeyRename,
    PasskeySignIn,
    RegistrationCredential,
    RequestOptions,
    creation_options,
    request_options,
    response_json,
)
from authgate.entrypoints.rest import ApiKey, BearerJWT, Call, Cookie, Cors, Reply, path, pattern
from authgate.ports.ratelimit import RateLimiter
from authgate.services.passkeys import PasskeyService

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


class PasskeyOperations(AccountArea):
    """Registers the passkey operations on an API."""

    tag = docs.PASSKEYS

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

    async def _limit(self, request: web.Request) -> None:
        """Before any work: each options request stores a challenge."""
        key = self.client_address.limit_key(self.client_address.of(request))
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
        await self._limit(request)
        signed_in = await self.service.authenticate(
            request.cookies.get(BINDING_COOKIE),
            response_json(call.body),
            self.client_address.client(request),
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
