"""``GET|POST /oauth2/authorize`` (OpenID Connect Core 1.0 section 3.1.2): the browser's side
of the authorization code flow.

The browser's session is the ``session`` cookie (SameSite=Lax): sent with the top-level GET
navigation that brings the browser here, so single sign-on needs nothing more. A cross-site form
POST carries no Lax cookie: without one it is answered ``303`` to the same request as a GET
(a GET is never sent on to a POST, so this cannot loop).

Without a usable session, the sign-in page offers each configured provider through ``GET
/v1/auth/{provider}`` whose ``return_to`` resumes this request (``provider=<name>`` goes straight
there); the session it issues names that request, signed
(:mod:`authgate.services.openid.authorization`). A fresh login (``prompt=login``, ``max_age``)
offers only the ways that prove one (providers that sign ``auth_time``, passkeys); without any,
``login_required``. Consent is :mod:`~.consent`'s; the answers are :mod:`~.flow`'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import quote, urlencode

import attrs
from aiohttp import web

from authgate.domain.openid.authorization_request import PROVIDER_PARAMETER
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.common.session_auth import SESSION_COOKIE, SameOriginGuard
from authgate.entrypoints.http.openid.consent import ConsentOperations
from authgate.entrypoints.http.openid.discovery import AUTHORIZE_PATH, ProviderOperations
from authgate.entrypoints.http.openid.flow import (
    Answers,
    browser_session,
    form_fields,
    lists,
    see,
)
from authgate.entrypoints.http.openid.pages import (
    PasskeyChoice,
    ProviderChoice,
    any_address,
    over_limit_page,
    shown_name,
    sign_in_page,
)
from authgate.entrypoints.rest import Api, Call, Param, query, required_by_operation
from authgate.ports.ratelimit import RateLimiter
from authgate.services.openid.authorization import (
    AuthorizationService,
    CodeIssued,
    ConsentNeeded,
    SignInNeeded,
)
from authgate.services.sessions import SessionService

SIGN_IN_PATH = "/v1/auth/{provider}"


_RESPONSES: dict[int, type | str] = {
    200: "An HTML page (text/html): authgate's sign-in page, the consent page, or the "
    "form that posts the answer to the redirect_uri (response_mode=form_post)",
    302: "The authorization response at the client's redirect_uri (query: code, "
    "state, iss; or error, error_description, state, iss), or on to the provider "
    "named by the provider parameter",
    400: "An HTML error page: the client is unknown or the redirect_uri is not one it "
    "registered (never a redirect)",
    429: "An HTML page with Retry-After: too many requests from this client address "
    "(ratelimit.authorize)",
}
_DESCRIPTION = (
    "The authorization code flow with PKCE (S256, required). A browser with a live "
    "authgate session gets a code at once (single sign-on) unless prompt=login or "
    "max_age asks for a newer sign-in; otherwise it signs in on authgate's page "
    "(or straight at the provider parameter's provider) and comes back. A client that "
    "is not first-party needs the person's consent once per scope set. Errors go to "
    "the redirect_uri as OAuth errors (invalid_request, unsupported_response_type, "
    "invalid_scope, login_required, consent_required, access_denied, "
    "request_not_supported, request_uri_not_supported)."
)


def _required(name: str, description: str) -> Param:
    return query(name, required_by_operation, description=description)


# The request's parameters, as the handler reads them (each with all its values, in order):
# the ones RFC 6749 requires are checked by the request's parser, in its order of checks.
AUTHORIZE_PARAMS: tuple[Param, ...] = (
    _required("response_type", "code (the only response type)."),
    _required("client_id", "A registered client."),
    _required(
        "redirect_uri",
        "One of the client's registered redirect URIs, exactly (a public client's loopback "
        "one on any port).",
    ),
    _required("scope", "Space-separated; must include openid."),
    _required("code_challenge", "PKCE: base64url SHA-256 of the code verifier (43 characters)."),
    _required("code_challenge_method", "S256 (plain is refused)."),
    query("state", description="Returned unchanged with the answer."),
    query("nonce", description="Returned in the ID token."),
    query(
        "response_mode",
        description="query (default) or form_post.",
        examples=["query", "form_post"],
    ),
    query(
        "prompt",
        description="none: no page (login_required / consent_required instead); login: "
        "sign in again at the provider; consent: ask for consent again.",
        examples=["none", "login", "consent"],
    ),
    query(
        "max_age",
        description="Seconds: an older sign-in is renewed at the provider; the ID token "
        "then carries auth_time.",
    ),
    query("login_hint", description="Passed on to the provider where it takes one."),
    query(
        "id_token_hint",
        description="An ID token this provider issued to the client: with prompt=none, "
        "the signed-in account must be its subject (else login_required).",
    ),
    query(
        PROVIDER_PARAMETER,
        description="authgate's own: a configured identity provider to sign in with "
        "straight away, instead of authgate's sign-in page.",
    ),
    query(
        "resource",
        description="RFC 8707, repeatable: a resource server the access tokens are for, one "
        "of the client's registered resources (else invalid_target); the token request may "
        "narrow them.",
    ),
    query("request", description="Request objects are not supported: request_not_supported."),
    query(
        "request_uri",
        description="Request objects are not supported: request_uri_not_supported.",
    ),
)


@attrs.frozen
class SignInStart:
    """Where authgate's sign-in starts: the issuer, each provider's callback URL, and the
    providers whose sign-ins prove when the person logged in (``proving``)."""

    issuer: str
    callbacks: Mapping[str, str]
    proving: frozenset[str] = frozenset()

    def url(
        self,
        provider: str,
        *,
        intent: str,
        return_to: str,
        login_hint: str | None,
    ) -> str:
        params = {
            "redirect_uri": self.callbacks[provider],
            "intent": intent,
            "return_to": return_to,
        }
        if login_hint:
            params["login_hint"] = login_hint
        path = SIGN_IN_PATH.format(provider=quote(provider, safe=""))
        return f"{self.issuer}{path}?{urlencode(params)}"


@attrs.frozen
class AuthorizeForm:
    """The authorization request as a form (``POST /oauth2/authorize``)."""

    response_type: str | None = None
    client_id: str | None = None
    redirect_uri: str | None = None
    scope: str | None = None
    state: str | None = None
    nonce: str | None = None
    code_challenge: str | None = None
    code_challenge_method: str | None = None
    response_mode: str | None = None
    prompt: str | None = None
    max_age: str | None = None
    login_hint: str | None = None
    id_token_hint: str | None = None
    provider: str | None = None
    resource: str | None = None  # RFC 8707; may be repeated


@attrs.define(slots=False, eq=False)
class AuthorizeOperations(ProviderOperations):
    """The authorization endpoint, and the consent form it shows."""

    service: AuthorizationService
    sessions: SessionService
    guard: SameOriginGuard
    sign_in: SignInStart
    passkeys: bool = attrs.field(default=False, kw_only=True)  # the page offers passkeys
    # ratelimit.authorize, per client address, before anything (a signed-in browser's request
    # writes a code)
    limiter: RateLimiter | None = attrs.field(default=None, kw_only=True)
    client_address: ClientAddress = attrs.field(default=None, converter=any_address, kw_only=True)

    issuer: str = attrs.field(init=False)
    answers: Answers = attrs.field(init=False)
    consent: ConsentOperations = attrs.field(init=False)  # shares this endpoint's answers

    def __attrs_post_init__(self) -> None:
        self.issuer = self.service.issuer
        self.answers = Answers(self.issuer)
        self.consent = ConsentOperations(self.service, self.sessions, self.guard, self.answers)

    def register(self, api: Api) -> None:
        """Registers the endpoint (``GET`` and the form ``POST``), then the consent form."""
        super().register(api)
        self.consent.register(api)

    @operation(
        "GET",
        AUTHORIZE_PATH,
        params=list(AUTHORIZE_PARAMS),
        status=302,
        responses=_RESPONSES,
        operation_id="authorize",
        summary="Authorization endpoint (OpenID Connect)",
        description=_DESCRIPTION,
    )
    async def authorize(self, call: Call[None]) -> web.StreamResponse:
        refused = await over_limit_page(self.limiter, self.client_address, call.request)
        if refused is not None:
            return refused
        return await self.answers.refusals_answered(self._outcome(call.request, call.query))

    @operation(
        "POST",
        AUTHORIZE_PATH,
        form=AuthorizeForm,
        status=302,
        responses={
            **_RESPONSES,
            303: "The same request as a GET, when the form came without the session cookie (a "
            "cross-site POST carries no SameSite=Lax cookie)",
        },
        operation_id="authorize_form",
        summary="Authorization endpoint, as a form post",
        description=_DESCRIPTION + " The same parameters as the GET, as a form.",
    )
    async def authorize_form(self, call: Call[AuthorizeForm]) -> web.StreamResponse:
        request = call.request
        refused = await over_limit_page(self.limiter, self.client_address, request)
        if refused is not None:
            return refused
        fields = await form_fields(request)
        if SESSION_COOKIE not in request.cookies:
            return see(f"{self.issuer}{AUTHORIZE_PATH}?{urlencode(fields)}", status=303)
        return await self.answers.refusals_answered(self._outcome(request, lists(fields)))

    async def _outcome(
        self, http: web.Request, params: Mapping[str, Sequence[str]]
    ) -> web.StreamResponse:
        request, client = await self.service.parse(params)
        session = await browser_session(self.sessions, http)
        outcome = await self.service.authorize(request, client, session)
        if isinstance(outcome, CodeIssued):
            return self.answers.code(outcome)
        if isinstance(outcome, ConsentNeeded):
            return self.consent.page(http, outcome)
        return self._sign_in(outcome)

    def _sign_in(self, needed: SignInNeeded) -> web.StreamResponse:
        """authgate's sign-in page, or straight to the provider the request names."""
        request = needed.request
        resume = self.answers.authorize_url(request.parameters())

        def start(provider: str, intent: str) -> str:
            return self.sign_in.url(
                provider, intent=intent, return_to=resume, login_hint=request.login_hint
            )

        names = [
            name
            for name in self.sign_in.callbacks
            if not needed.fresh or name in self.sign_in.proving
        ]
        if request.provider is not None and request.provider in names:
            return see(start(request.provider, "login"), status=302)
        if needed.fresh and not names and not self.passkeys:
            raise request.refuse(
                needed.client,
                "login_required",
                "no configured way of signing in can prove a recent login",
            )
        choices = [
            ProviderChoice(name, start(name, "login"), start(name, "register")) for name in names
        ]
        passkey = PasskeyChoice(self.issuer, resume) if self.passkeys else None
        return sign_in_page(shown_name(needed.client), choices, fresh=needed.fresh, passkey=passkey)
