"""Signing in and out: ``GET /v1/auth/{provider}`` (spec 4.5), ``GET|POST
/v1/auth/{provider}/callback`` (spec 4.6) and ``POST /v1/auth/logout``.

Sign-out clears the ``session`` cookie and the binding cookie (and the binding cookie's
name before it took the ``__Host-`` prefix). With a cookie present it is a cookie-
authenticated change and passes the same-origin guard. The session JWT is stateless: a copy
of it stays valid until it expires.
"""

from __future__ import annotations

import re

import attrs
from aiohttp import web

from authgate.domain import errors
from authgate.domain.model import ClientInfo, Intent
from authgate.domain.secrets import new_secret
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import AppError, ProviderDetails
from authgate.entrypoints.http.common.caller import ClientAddress, accepts_only_json, prefers_html
from authgate.entrypoints.http.common.docs import describe_tags
from authgate.entrypoints.http.common.errors import (
    CALLBACK_HEADERS,
    app_error,
    callback_answer,
    rate_limited,
)
from authgate.entrypoints.http.common.session_auth import (
    SESSION_COOKIE,
    SESSION_COOKIE_SCHEME,
    SameOriginGuard,
    auth_time_of,
    session_id_of,
)
from authgate.entrypoints.rest import (
    Api,
    Call,
    Cookie,
    Cors,
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

# ``__Host-``: the browser accepts it only with Secure, Path=/ and no Domain, so a sibling
# subdomain cannot plant or overwrite it (docs/security.md, "Browser binding").
BINDING_COOKIE = "__Host-authgate_binding"
BINDING_PATH = "/"
# The name before the prefix: cleared at sign-out for browsers that still hold it.
LEGACY_BINDING_COOKIE = ("authgate_binding", "/v1/auth")
NO_STORE = {"Cache-Control": "no-store"}
BINDING_FORMAT = re.compile(r"^[A-Za-z0-9_-]{32,128}$")
CALLBACK_FIELDS = ("code", "state", "error", "error_description", "iss")
EVERYWHERE_NEEDS_A_SESSION = (
    "signing out everywhere needs a live session; this one has ended (expired, revoked or "
    "unknown) or none was sent: nothing was signed out"
)


@attrs.frozen
class CallbackForm:
    """The fields a provider posts with ``response_mode=form_post`` (Apple adds ``user``, its
    first-time name and email as JSON; other posted fields, such as ``id_token``, are ignored:
    the ID token is taken from the token endpoint, never from the browser)."""

    code: str | None = None
    state: str | None = None
    error: str | None = None
    error_description: str | None = None
    user: str | None = None
    iss: str | None = None  # RFC 9207


class SignInOperations:
    """Registers the sign-in operations on an API."""

    def __init__(
        self,
        service: SignInService,
        link_schemes: tuple[SecurityScheme, ...],
        sessions: SessionService,
        limiter: RateLimiter,
        client_address: ClientAddress,
        initiation_limiter: RateLimiter,
        guard: SameOriginGuard,
        cors: Cors | None = None,
    ) -> None:
        self.service = service
        self.link_schemes = link_schemes  # who may link: bearer, then the cookie
        self.sessions = sessions
        self.limiter = limiter  # the callback's
        self.client_address = client_address
        self.initiation_limiter = initiation_limiter
        self.guard = guard
        self.cors = cors  # sign-out from the application's pages on other origins

    def register(self, api: Api) -> None:
        configured = list(self.service.providers)  # the configuration's, at registration
        intents = [i.value for i in Intent]
        describe_tags(api, docs.SIGN_IN)
        # Examples, not an enum: an unknown name must still answer 400 invalid_provider.
        provider = path(
            "provider",
            description="A configured identity provider: " + ", ".join(configured) + ".",
            examples=configured,
        )
        bad_provider = docs.unknown_provider(configured)
        api.operation(
            "GET",
            "/v1/auth/{provider}",
            params=[
                provider,
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
                        r"^(login|register|link|reauthenticate)$",
                        "intent must be one of " + ", ".join(intents),
                    ),
                    description="Why the sign-in starts: "
                    + ", ".join(intents)
                    + " (default login). link and reauthenticate need a signed-in caller "
                    "(bearer token or session cookie with scope account:manage).",
                    examples=intents,
                ),
                query(
                    "login_hint",
                    description="Who is signing in (an email address, say), passed on to "
                    "OpenID Connect providers.",
                ),
            ],
            summary="Start signing in with a provider",
            description="Stores a pending sign-in (state, PKCE verifier, nonce, bound to this "
            "browser by a cookie) and answers the provider's authorization URL as JSON; a "
            "browser that asks for HTML is redirected there (302). With intent=link the "
            "provider is linked to the signed-in account; with intent=reauthenticate the "
            "caller signs in again (a recent sign-in for sensitive changes).",
            examples=docs.error_examples(
                bad_provider,
                errors.MissingParameter("redirect_uri"),
                errors.InvalidRequest(
                    f"redirect_uri is not an allowed callback address for provider "
                    f"{configured[0] if configured else 'google'}"
                ),
                errors.NotAuthenticated("link needs a signed-in caller", "link"),
                docs.STEP_UP,
                docs.BAD_TOKEN,
                docs.insufficient_scope("account:manage"),
                docs.CROSS_SITE,
                docs.rate_limited_example("too many sign-ins started; retry later"),
                errors.TemporarilyUnavailable(),
                errors.ProviderUnavailable("discovery failed"),
            ),
            response=ProviderDetails,
            responses={
                302: "Redirect to the provider (browsers)",
                401: AppError,
                403: AppError,
                429: AppError,
                503: AppError,
            },
            operation_id="start_sign_in",
            tags=(docs.SIGN_IN,),
        )(self.start)
        callback_params = [
            provider,
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
            # RFC 9207: the issuer of the authorization response
            query(
                "iss",
                description="The issuer of the authorization response (RFC 9207); checked "
                "against the provider's when present.",
            ),
        ]
        callback_errors = docs.error_examples(
            bad_provider,
            errors.InvalidRequest("missing required parameter: code"),
            errors.InvalidState("no pending sign-in for this provider, state and browser"),
            errors.AccessDenied("access_denied"),
            errors.IdentityDisabled("account-disabled"),
            errors.ReauthenticationRefused("reauthentication_identity_mismatch"),
            errors.AccountNotFound(),
            errors.IdentityLinkedElsewhere(),
            docs.rate_limited_example("too many sign-in callbacks; retry later"),
            errors.ProviderError("server_error", "the provider failed"),
        )
        for method in ("GET", "POST"):
            api.operation(
                method,
                "/v1/auth/{provider}/callback",
                params=callback_params if method == "GET" else [provider],
                form=CallbackForm if method == "POST" else None,
                status=302,
                responses={
                    302: "Signed in (session cookie set), or sent to the login page with "
                    "error and reason",
                    401: AppError,
                    403: AppError,
                    429: AppError,
                },
                operation_id="complete_sign_in" if method == "GET" else "complete_sign_in_form",
                tags=(docs.SIGN_IN,),
                summary="Complete signing in (the provider's redirect)"
                if method == "GET"
                else "Complete signing in (the provider's form post)",
                description="The provider sends the browser here with a code and the state. "
                "The pending sign-in of this provider, state and browser is taken, the code "
                "exchanged and the ID token verified; the session cookie is set and the "
                "browser redirected to the application (302). A failure redirects to the "
                "application's login page with error and reason; a client that accepts only "
                "JSON gets the JSON error instead."
                + (
                    ""
                    if method == "GET"
                    else " This form (response_mode=form_post) is how Apple answers."
                ),
                examples=callback_errors,
            )(self.callback)
        api.operation(
            "POST",
            "/v1/auth/logout",
            params=[
                query(
                    "everywhere",
                    pattern(r"^(true|false)$"),
                    description="true: end every session of the account (needs a recent "
                    "sign-in); false or absent: only this one.",
                    examples=["false", "true"],
                )
            ],
            status=204,
            responses={
                204: "Signed out: the session is revoked (everywhere=true: every session of the "
                "account) and the session and binding cookies are cleared",
                401: AppError,
                403: AppError,
            },
            operation_id="sign_out",
            tags=(docs.SIGN_IN,),
            summary="Sign out",
            description="Revokes the caller's session (bearer token or session cookie) and "
            "clears the session and binding cookies. Without a live session a plain sign-out "
            "answers 204 (nothing is left to end); everywhere=true answers 401 then.",
            examples=docs.error_examples(
                app_error(401, "unauthorized", EVERYWHERE_NEEDS_A_SESSION),
                docs.STEP_UP,
                docs.CROSS_SITE,
            ),
            cors=self.cors,
        )(self.logout)

    # -- GET /v1/auth/{provider} ----------------------------------------------------------

    async def start(self, call: Call[None]) -> web.StreamResponse | Reply[ProviderDetails]:
        request = call.request
        # Before any work: each start stores a pending sign-in (docs/security.md, "Rate limits").
        client = self.client_address.limit_key(self.client_address.of(request))
        decision = await self.initiation_limiter.hit(client)
        if not decision.allowed:
            self.service.metrics.rate_limited("initiation")
            raise rate_limited(decision, "too many sign-ins started; retry later")
        binding = request.cookies.get(BINDING_COOKIE, "")
        if not BINDING_FORMAT.match(binding):
            binding = new_secret()
        try:
            intent = Intent(call.params.first("intent") or "login")
        except ValueError:  # the declared pattern refuses it first; never a 500 regardless
            raise app_error(
                400,
                "invalid_request",
                "intent must be one of login, register, link, reauthenticate",
            ) from None
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
        details = ProviderDetails(
            provider=authorization.provider,
            authorization_url=authorization.authorization_url,
            client_id=authorization.client_id,
            scopes=list(authorization.scopes),
            response_type=authorization.response_type,
            state=authorization.state,
        )
        binding_cookie = Cookie(
            BINDING_COOKIE,
            binding,
            max_age=authorization.state_max_age,
            path=BINDING_PATH,
            samesite="None",  # a form_post callback is a cross-site POST: it must carry it
        )
        if prefers_html(request):  # a plain link in a browser goes straight to the provider
            redirect = web.Response(
                status=302,
                headers={"Location": authorization.authorization_url, "Cache-Control": "no-store"},
            )
            binding_cookie.set_on(redirect)
            return redirect
        return Reply(details, headers=NO_STORE, cookies=(binding_cookie,))

    async def _signed_in_caller(
        self, request: web.Request, *, step_up: bool
    ) -> tuple[str, str] | None:
        """The signed-in caller who may link a provider to their account (its account and
        session ids), or None.

        Linking changes the account, so it follows the rules of the other account changes:
        the caller is authenticated by the REST layer's schemes (bearer first, then the
        session cookie) with scope ``account:manage`` (403 ``insufficient_scope``), and when
        the cookie is the credential the request must pass the same-origin guard (403
        ``cross_site_request``): a cross-site page must not be able to start a link on a
        signed-in user's behalf with a top-level GET. A plain sign-in start looks at no
        credential at all (a stale cookie must not stop anyone signing in again).
        And like every account change it needs a recent sign-in (RFC 9470: 401
        ``reauthentication_required``).
        """
        principal = await authenticate(request, self.link_schemes, optional=True)
        if principal is None:
            return None
        if principal.scheme == SESSION_COOKIE_SCHEME:
            self.guard.check(request)
        if step_up:  # linking; re-authentication is what restores a stale sign-in
            self.sessions.require_recent_authentication(auth_time_of(principal))
        return principal.subject, session_id_of(principal)

    # -- GET|POST /v1/auth/{provider}/callback --------------------------------------------

    async def callback(self, call: Call[CallbackForm | None]) -> web.StreamResponse:
        request = call.request
        address = self.client_address.of(request)
        decision = await self.limiter.hit(self.client_address.limit_key(address))
        if not decision.allowed:
            self.service.metrics.rate_limited("callback")
            raise rate_limited(decision, "too many sign-in callbacks; retry later")
        fields = _callback_fields(call)
        try:
            signed_in = await self.service.complete(
                call.path["provider"],
                code=fields.get("code"),
                state=fields.get("state"),
                error=fields.get("error"),
                error_description=fields.get("error_description"),
                user=fields.get("user"),
                iss=fields.get("iss"),
                binding=request.cookies.get(BINDING_COOKIE),
                client=ClientInfo(address, request.headers.get("User-Agent")),
            )
        except errors.SignInError as e:
            return callback_answer(e, self.service.login_url(), accepts_only_json(request))
        response = web.Response(
            status=302, headers={"Location": signed_in.destination, **CALLBACK_HEADERS}
        )
        Cookie(SESSION_COOKIE, signed_in.session.token, max_age=signed_in.session_max_age).set_on(
            response
        )
        return response

    # -- POST /v1/auth/logout ---------------------------------------------------------------

    async def logout(self, call: Call[None]) -> web.StreamResponse | Reply[None]:
        """Revoke the caller's session (``everywhere=true``: every session of the account,
        which like other revocations of other sessions needs a recent sign-in), then clear
        the cookies.

        Only a live session signs anything out. Without one (no token, or one that expired,
        was revoked or never verified) a plain sign-out has nothing left to end and answers
        204, its purpose achieved (as RFC 7009 answers the revocation of an invalid token);
        ``everywhere=true`` answers 401 ``unauthorized``, nothing signed out: a copy of an
        ended session must not end the sessions that followed it. The cookies are cleared
        either way: the browser holds nothing it can still use."""
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
            client = ClientInfo(self.client_address.of(request), request.headers.get("User-Agent"))
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


def signed_out_cookies() -> tuple[Cookie, ...]:
    """What a sign-out sets: the session cookie and the binding cookies cleared."""
    legacy, legacy_path = LEGACY_BINDING_COOKIE
    return (
        Cookie(SESSION_COOKIE, "", max_age=0),
        Cookie(BINDING_COOKIE, "", max_age=0, path=BINDING_PATH, samesite="None"),
        Cookie(legacy, "", max_age=0, path=legacy_path, samesite="None"),
    )


def _callback_fields(call: Call[CallbackForm | None]) -> dict[str, str]:
    """The callback's non-empty fields: from the form body (POST, form_post) or the query."""
    if call.body is not None:
        source = attrs.asdict(call.body)
    else:
        source = {k: call.params.first(k) for k in CALLBACK_FIELDS}
    return {k: v for k, v in source.items() if v}
