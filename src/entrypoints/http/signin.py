"""Signing in and out: ``GET /v1/auth/{provider}`` (spec 4.5), ``GET|POST
/v1/auth/{provider}/callback`` (spec 4.6) and ``POST /v1/auth/logout``."""

from __future__ import annotations

from typing import Any

import attrs
from aiohttp import web

from authgate.domain import errors
from authgate.domain.model import Intent
from authgate.domain.secrets import new_secret
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.binding import (
    BINDING_COOKIE,
    LEGACY_BINDING_COOKIE,
    binding_cookie,
    held_binding,
    signed_out_cookies,
)
from authgate.entrypoints.http.common.bodies import ProviderDetails, app_errors, from_record
from authgate.entrypoints.http.common.caller import (
    ClientAddress,
    accepts_only_json,
    admit,
    prefers_html,
)
from authgate.entrypoints.http.common.errors import CALLBACK_HEADERS, app_error, callback_answer
from authgate.entrypoints.http.common.operations import Late, Operations, flag, operation
from authgate.entrypoints.http.common.session_auth import (
    SESSION_COOKIE,
    SESSION_COOKIE_SCHEME,
    SameOriginGuard,
    auth_time_of,
    session_id_of,
)
from authgate.entrypoints.rest import (
    Call,
    Cookie,
    Cors,
    Param,
    Reply,
    path,
    pattern,
    query,
    required_by_operation,
)
from authgate.entrypoints.rest.security import SecurityScheme, authenticate
from authgate.ports.ratelimit import RateLimiter
from authgate.ports.session_tokens import InvalidSession
from authgate.services.sessions import SessionService
from authgate.services.signin import CALLER_INTENTS, MAX_STATE_LENGTH, SignInService

NO_STORE = {"Cache-Control": "no-store"}
CALLBACK_FIELDS = ("code", "state", "error", "error_description", "iss")
CALLBACK = "/v1/auth/{provider}/callback"
EVERYWHERE_NEEDS_A_SESSION = (
    "signing out everywhere needs a live session; this one has ended (expired, revoked or "
    "unknown) or none was sent: nothing was signed out"
)
TOO_MANY_STARTS = "too many sign-ins started; retry later"
TOO_MANY_CALLBACKS = "too many sign-in callbacks; retry later"
INTENTS = [i.value for i in Intent]

START_QUERIES = [
    query(
        "redirect_uri",
        required_by_operation,
        description="Required. The provider's callback address: one of the "
        "callback URLs configured for this provider (app.callback_urls).",
    ),
    query(
        "state",
        description=f"Optional client state (1 to {MAX_STATE_LENGTH} characters, "
        "no control characters), sent to the provider; generated when absent.",
    ),
    query(
        "return_to",
        description="Where the browser goes after signing in: a path on the "
        "application (/settings) or an address on its origin; anything else is "
        "ignored (the application's URL is used).",
    ),
    query(
        "intent",
        pattern(
            r"^(login|register|link|reauthenticate)$", "intent must be one of " + ", ".join(INTENTS)
        ),
        description="Why the sign-in starts: "
        + ", ".join(INTENTS)
        + " (default login). link and reauthenticate need a signed-in caller "
        "(bearer token or session cookie with scope account:manage).",
        examples=INTENTS,
    ),
    query(
        "login_hint",
        description="Who is signing in (an email address, say), passed on to "
        "OpenID Connect providers.",
    ),
]
CALLBACK_QUERIES = [
    query(
        "code",
        required_by_operation,
        description="The authorization code the provider issued (absent with error).",
    ),
    query(
        "state",
        required_by_operation,
        description="The state of the pending sign-in, as the provider returns it.",
    ),
    query(
        "error",
        description="The provider's error code, when it did not authorize "
        "(access_denied: the user declined).",
    ),
    query("error_description", description="The provider's text for its error."),
    query(
        "iss",
        description="The issuer of the authorization response (RFC 9207); checked "
        "against the provider's when present.",
    ),
]
CALLBACK_DECLARATION: dict[str, Any] = {
    "status": 302,
    "responses": {
        302: "Signed in (session cookie set), or sent to the login page with error and reason",
        **app_errors(401, 403, 429),
    },
    "refusals": Late(lambda face: face.callback_refusals()),
    "cors": None,
}
CALLBACK_DESCRIPTION = (
    "The provider sends the browser here with a code and the state. "
    "The pending sign-in of this provider, state and browser is taken, the code "
    "exchanged and the ID token verified; the session cookie is set and the "
    "browser redirected to the application (302). A failure redirects to the "
    "application's login page with error and reason; a client that accepts only "
    "JSON gets the JSON error instead."
)


@attrs.frozen
class CallbackForm:
    """The fields a provider posts with ``response_mode=form_post`` (Apple adds ``user``); any
    other (``id_token``) is ignored: the ID token comes from the token endpoint, never the
    browser."""

    code: str | None = None
    state: str | None = None
    error: str | None = None
    error_description: str | None = None
    user: str | None = None
    iss: str | None = None  # RFC 9207


@attrs.define(slots=False, eq=False)
class SignInOperations(Operations):
    """Registers the sign-in operations on an API."""

    tag = docs.SIGN_IN

    service: SignInService
    link_schemes: tuple[SecurityScheme, ...]  # who may link: bearer, then the cookie
    sessions: SessionService
    limiter: RateLimiter  # the callback's
    client_address: ClientAddress
    initiation_limiter: RateLimiter
    guard: SameOriginGuard
    cors: Cors | None = None  # sign-out from the application's pages on other origins

    @property
    def configured(self) -> list[str]:
        """The configured providers, in the configuration's order."""
        return list(self.service.providers)

    @property
    def provider_param(self) -> Param:
        """``{provider}``: examples, not an enum (an unknown name answers 400)."""
        return path(
            "provider",
            description="A configured identity provider: " + ", ".join(self.configured) + ".",
            examples=self.configured,
        )

    def start_refusals(self) -> tuple[Exception, ...]:
        """What starting a sign-in with the first configured provider can answer."""
        first = self.configured[0] if self.configured else "google"
        return (
            docs.unknown_provider(self.configured),
            errors.MissingParameter("redirect_uri"),
            errors.InvalidRequest(
                f"redirect_uri is not an allowed callback address for provider {first}"
            ),
            errors.NotAuthenticated("link needs a signed-in caller", "link"),
            docs.STEP_UP,
            docs.BAD_TOKEN,
            docs.MANAGE_SCOPE,
            docs.CROSS_SITE,
            docs.rate_limited_example(TOO_MANY_STARTS),
            errors.TemporarilyUnavailable(),
            errors.ProviderUnavailable("discovery failed"),
        )

    def callback_refusals(self) -> tuple[Exception, ...]:
        """What a callback can answer a client that accepts only JSON."""
        return (
            docs.unknown_provider(self.configured),
            errors.InvalidRequest("missing required parameter: code"),
            errors.InvalidState("no pending sign-in for this provider, state and browser"),
            errors.AccessDenied("access_denied"),
            errors.IdentityDisabled("account-disabled"),
            errors.ReauthenticationRefused("reauthentication_identity_mismatch"),
            errors.AccountNotFound(),
            errors.IdentityLinkedElsewhere(),
            docs.rate_limited_example(TOO_MANY_CALLBACKS),
            errors.ProviderError("server_error", "the provider failed"),
        )

    @operation(
        "GET",
        "/v1/auth/{provider}",
        params=Late(lambda face: [face.provider_param, *START_QUERIES]),
        summary="Start signing in with a provider",
        description="Stores a pending sign-in (state, PKCE verifier, nonce, bound to this "
        "browser by a cookie) and answers the provider's authorization URL as JSON; a "
        "browser that asks for HTML is redirected there (302). With intent=link the "
        "provider is linked to the signed-in account; with intent=reauthenticate the "
        "caller signs in again (a recent sign-in for sensitive changes).",
        refusals=Late(lambda face: face.start_refusals()),
        response=ProviderDetails,
        responses={302: "Redirect to the provider (browsers)", **app_errors(401, 403, 429, 503)},
        operation_id="start_sign_in",
        cors=None,
    )
    async def start(self, call: Call[None]) -> web.StreamResponse | Reply[ProviderDetails]:
        request = call.request
        # Before any work: each start stores a pending sign-in.
        key = self.client_address.limit_key(self.client_address.of(request))
        await admit(
            self.initiation_limiter, key, self.service.metrics, "initiation", TOO_MANY_STARTS
        )
        binding = held_binding(request) or new_secret()
        intent = Intent(call.params.first("intent") or "login")  # its pattern checked it
        caller = (
            await self._signed_in_caller(request, step_up=intent is Intent.LINK)
            if intent in CALLER_INTENTS
            else None
        )
        authorization = await self.service.start(
            call.path["provider"],
            redirect_uri=call.params.first("redirect_uri"),
            binding=binding,
            state=call.params.first("state"),
            return_to=call.params.first("return_to"),
            intent=intent,
            account_id=caller[0] if caller else None,
            session_id=caller[1] if caller else None,
            login_hint=call.params.first("login_hint"),
        )
        cookie = binding_cookie(binding, authorization.state_max_age)
        if prefers_html(request):  # a plain link in a browser goes straight to the provider
            redirect = web.Response(
                status=302,
                headers={"Location": authorization.authorization_url, "Cache-Control": "no-store"},
            )
            cookie.set_on(redirect)
            return redirect
        details = from_record(ProviderDetails, authorization, scopes=list(authorization.scopes))
        return Reply(details, headers=NO_STORE, cookies=(cookie,))

    async def _signed_in_caller(
        self, request: web.Request, *, step_up: bool
    ) -> tuple[str, str] | None:
        """The signed-in caller's account and session ids, or None. Linking is an account
        change and follows its rules: a cross-site page must not start a link with a top-level
        GET."""
        principal = await authenticate(request, self.link_schemes, optional=True)
        if principal is None:
            return None
        if principal.scheme == SESSION_COOKIE_SCHEME:
            self.guard.check(request)
        if step_up:  # linking; re-authentication is what restores a stale sign-in
            self.sessions.require_recent_authentication(auth_time_of(principal))
        return principal.subject, session_id_of(principal)

    @operation(
        "GET",
        CALLBACK,
        params=Late(lambda face: [face.provider_param, *CALLBACK_QUERIES]),
        operation_id="complete_sign_in",
        summary="Complete signing in (the provider's redirect)",
        description=CALLBACK_DESCRIPTION,
        **CALLBACK_DECLARATION,
    )
    @operation(
        "POST",
        CALLBACK,
        params=Late(lambda face: [face.provider_param]),
        form=CallbackForm,
        operation_id="complete_sign_in_form",
        summary="Complete signing in (the provider's form post)",
        description=CALLBACK_DESCRIPTION
        + " This form (response_mode=form_post) is how Apple answers.",
        **CALLBACK_DECLARATION,
    )
    async def callback(self, call: Call[CallbackForm | None]) -> web.StreamResponse:
        request = call.request
        address = self.client_address.of(request)
        key = self.client_address.limit_key(address)
        await admit(self.limiter, key, self.service.metrics, "callback", TOO_MANY_CALLBACKS)
        try:
            signed_in = await self.service.complete(
                call.path["provider"],
                **_callback_fields(call),
                binding=request.cookies.get(BINDING_COOKIE),
                client=self.client_address.client(request, address),
            )
        except errors.SignInError as e:
            return callback_answer(e, self.service.policy.login_url, accepts_only_json(request))
        response = web.Response(
            status=302, headers={"Location": signed_in.destination, **CALLBACK_HEADERS}
        )
        Cookie(SESSION_COOKIE, signed_in.session.token, max_age=signed_in.session_max_age).set_on(
            response
        )
        return response

    @operation(
        "POST",
        "/v1/auth/logout",
        params=[
            flag(
                "everywhere",
                "true: end every session of the account (needs a recent sign-in); false or "
                "absent: only this one.",
            )
        ],
        status=204,
        responses={
            204: "Signed out: the session is revoked (everywhere=true: every session of the "
            "account) and the session and binding cookies are cleared",
            **app_errors(401, 403),
        },
        operation_id="sign_out",
        summary="Sign out",
        description="Revokes the caller's session (bearer token or session cookie) and "
        "clears the session and binding cookies. Without a live session a plain sign-out "
        "answers 204 (nothing is left to end); everywhere=true answers 401 then.",
        refusals=(
            app_error(401, "unauthorized", EVERYWHERE_NEEDS_A_SESSION),
            docs.STEP_UP,
            docs.CROSS_SITE,
        ),
    )
    async def logout(self, call: Call[None]) -> web.StreamResponse | Reply[None]:
        """Revoke the caller's session (or all of them), then clear the cookies either way.
        Without a live session a plain sign-out has nothing to end (204, as RFC 7009 answers
        an invalid token); ``everywhere=true`` is refused: a copy of an ended session must not
        end the sessions that followed it."""
        request = call.request
        if any(
            c in request.cookies for c in (SESSION_COOKIE, BINDING_COOKIE, LEGACY_BINDING_COOKIE[0])
        ):
            self.guard.check(request)
        everywhere = call.params.first("everywhere") == "true"
        header = request.headers.get("Authorization", "")
        bearer = header[7:].strip() if header.lower().startswith("bearer ") else None
        token = bearer or request.cookies.get(SESSION_COOKIE)
        cleared = signed_out_cookies()
        live = False
        if token:
            client = self.client_address.client(request)
            try:
                await self.sessions.sign_out(token, client=client, everywhere=everywhere)
                live = True
            except InvalidSession:
                pass
        if everywhere and not live:
            refusal = app_error(
                401,
                "unauthorized",
                EVERYWHERE_NEEDS_A_SESSION,
                {
                    "WWW-Authenticate": 'Bearer error="invalid_token"' if token else "Bearer",
                    **NO_STORE,
                },
            ).response()
            for cookie in cleared:
                cookie.set_on(refusal)
            return refusal
        return Reply(None, status=204, headers=NO_STORE, cookies=cleared)


def _callback_fields(call: Call[CallbackForm | None]) -> dict[str, str | None]:
    """The callback's fields from the form or the query, None when absent or empty."""
    if call.body is not None:
        sent = attrs.asdict(call.body)
    else:
        sent = {k: call.params.first(k) for k in CALLBACK_FIELDS}
    return {k: sent.get(k) or None for k in attrs.fields_dict(CallbackForm)}
