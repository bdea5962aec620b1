"""``GET|POST /oauth2/authorize`` (OpenID Connect Core 1.0 section 3.1.2) and ``POST
/oauth2/consent``: the browser's side of the authorization code flow.

**Which session.** The browser's authgate session is the ``session`` cookie (HttpOnly, Secure,
SameSite=Lax, Path=/), verified as the account operations verify it. Lax lets a browser send it
on a top-level GET navigation from another site, which is how an application sends the browser
here: single sign-on needs nothing more, and the cookie stays unavailable to cross-site
requests of any other kind, so the account API's CSRF guarantees are unchanged. A cross-site
form POST (the POST form of this endpoint) carries no Lax cookie; when it arrives without one
it is answered ``303 See Other`` to the same request as a GET, which the browser sends as a
top-level navigation with the cookie. A GET is never sent on to a POST, so this cannot loop.

**Signing in.** Without a session that will do, authgate's sign-in page offers each configured
provider, to sign in (``intent=login``) or to create an account (``intent=register``), through
the existing ``GET /v1/auth/{provider}`` whose ``return_to`` resumes this request (the sign-in
admits exactly this endpoint's URL as a destination, beside the application's). The parameter
``provider=<name>`` skips the page and goes straight to that provider. The session that sign-in
issues names the request it resumes and when it began, signed (see
:mod:`authgate.services.openid.authorization`): nothing in the resumed address marks it. When
the request asks for a fresh login (``prompt=login``, ``max_age``), only the ways that prove
one are offered: the providers whose ID tokens sign ``auth_time``, and passkeys; without any,
the application receives ``login_required``.

**Consent** is a form posted back to authgate's own origin: it must pass the same-origin guard
and carry a token, the HMAC of the request, the session id and the time the page was shown
under a random key held in a ``__Host-`` cookie (SameSite=Strict) of this browser. A page of
another site can neither read the key nor make the browser send the form with it.

Every answer to the client goes to its registered ``redirect_uri`` with ``iss`` (RFC 9207):
``code`` and ``state``, or ``error``, ``error_description`` and ``state``; as the query (302) or,
with ``response_mode=form_post``, as a form the browser posts. An unknown client or a
``redirect_uri`` it did not register is an error page, never a redirect.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import quote, urlencode

import attrs
from aiohttp import web

from authgate.domain.openid.authorization_request import (
    PROVIDER_PARAMETER,
    AuthorizationRefused,
    AuthorizationRequest,
    NotRedirectable,
)
from authgate.domain.secrets import new_secret
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.session_auth import SESSION_COOKIE, SameOriginGuard
from authgate.entrypoints.http.openid.discovery import AUTHORIZE_PATH
from authgate.entrypoints.http.openid.pages import (
    PasskeyChoice,
    ProviderChoice,
    consent_page,
    error_page,
    form_post_page,
    sign_in_page,
    too_many_requests_page,
)
from authgate.entrypoints.rest import Api, Call, Cookie, Param, query, required_by_operation
from authgate.ports.ratelimit import RateLimiter
from authgate.ports.session_tokens import InvalidSession, SessionClaims
from authgate.services.openid.authorization import (
    AuthorizationService,
    CodeIssued,
    ConsentAnswered,
    ConsentNeeded,
    SignInNeeded,
)
from authgate.services.sessions import SessionService

CONSENT_PATH = "/oauth2/consent"
SIGN_IN_PATH = "/v1/auth/{provider}"
# The browser's key of consent forms: __Host- (Secure, Path=/, no Domain) so that no sibling
# sub-domain can plant one; Strict: sent only with authgate's own pages' requests.
CONSENT_COOKIE = "__Host-authgate_consent"
CONSENT_TTL_SECONDS = 600
_CONSENT_KEY = re.compile(r"[A-Za-z0-9_-]{43}")
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}

# Why a request was refused at the authorization endpoint, for the developer who reads the log.
log = logging.getLogger("authgate.security")


@attrs.frozen
class SignInStart:
    """Where authgate's sign-in starts for each configured provider: the issuer (the public
    base of every URL) and, per provider, the callback URL its sign-in uses; ``proving``: the
    providers whose sign-ins prove when the person logged in (a signed ``auth_time``)."""

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


@attrs.frozen
class ConsentForm:
    """The consent page's form: the request again, the page's token and the decision."""

    decision: str | None = None
    csrf: str | None = None
    issued: str | None = None
    granted: str | None = None
    client_id: str | None = None
    redirect_uri: str | None = None
    scope: str | None = None


class AuthorizeOperations:
    """Registers the authorization endpoint and the consent form."""

    def __init__(
        self,
        service: AuthorizationService,
        sessions: SessionService,
        guard: SameOriginGuard,
        sign_in: SignInStart,
        *,
        passkeys: bool = False,
        limiter: RateLimiter | None = None,
        client_address: ClientAddress | None = None,
    ) -> None:
        self.service = service
        self.sessions = sessions
        self.guard = guard
        self.sign_in = sign_in
        self.issuer = service.issuer
        self.passkeys = passkeys  # the sign-in page offers "Sign in with a passkey"
        # ratelimit.authorize, per client address, before anything (a signed-in browser's
        # request writes a code)
        self.limiter = limiter
        self.client_address = client_address or ClientAddress(())

    def register(self, api: Api) -> None:
        docs.describe_tags(api, docs.OPENID_PROVIDER)
        responses: dict[int, type | str] = {
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
        description = (
            "The authorization code flow with PKCE (S256, required). A browser with a live "
            "authgate session gets a code at once (single sign-on) unless prompt=login or "
            "max_age asks for a newer sign-in; otherwise it signs in on authgate's page "
            "(or straight at the provider parameter's provider) and comes back. A client that "
            "is not first-party needs the person's consent once per scope set. Errors go to "
            "the redirect_uri as OAuth errors (invalid_request, unsupported_response_type, "
            "invalid_scope, login_required, consent_required, access_denied, "
            "request_not_supported, request_uri_not_supported)."
        )
        api.operation(
            "GET",
            AUTHORIZE_PATH,
            params=_authorize_params(),
            status=302,
            responses=responses,
            operation_id="authorize",
            tags=(docs.OPENID_PROVIDER,),
            summary="Authorization endpoint (OpenID Connect)",
            description=description,
        )(self.authorize)
        api.operation(
            "POST",
            AUTHORIZE_PATH,
            form=AuthorizeForm,
            status=302,
            responses={
                **responses,
                303: "The same request as a GET, when the form came without the session "
                "cookie (a cross-site POST carries no SameSite=Lax cookie)",
            },
            operation_id="authorize_form",
            tags=(docs.OPENID_PROVIDER,),
            summary="Authorization endpoint, as a form post",
            description=description + " The same parameters as the GET, as a form.",
        )(self.authorize_form)
        api.operation(
            "POST",
            CONSENT_PATH,
            form=ConsentForm,
            status=302,
            responses={
                200: "The form that posts the answer to the redirect_uri (form_post)",
                302: "The authorization response at the client's redirect_uri: a code when "
                "approved, error=access_denied when declined",
                303: "Back to the authorization endpoint (the session ended meanwhile)",
                400: "An HTML error page (unknown client or redirect_uri)",
                403: "An HTML error page: the form did not come from authgate's consent page "
                "in this browser and session, or is older than ten minutes",
                409: "An HTML error page: the form was answered already, or the application's "
                "access changed since it was shown (a consent form is single use)",
            },
            operation_id="consent",
            tags=(docs.OPENID_PROVIDER,),
            summary="Answer the consent page",
            description="The consent page posts the authorization request back with its "
            "token and decision=approve or decision=deny. Same-origin only.",
        )(self.consent)

    # -- GET|POST /oauth2/authorize -------------------------------------------------------

    async def authorize(self, call: Call[None]) -> web.StreamResponse:
        if (refused := await self._over_limit(call.request)) is not None:
            return refused
        return await self._authorize(call.request, _lists(call.request.query.items()))

    async def authorize_form(self, call: Call[AuthorizeForm]) -> web.StreamResponse:
        request = call.request
        if (refused := await self._over_limit(request)) is not None:
            return refused
        fields = _text_fields((await request.post()).items())
        if SESSION_COOKIE not in request.cookies:
            location = f"{self.issuer}{AUTHORIZE_PATH}?{urlencode(fields)}"
            return web.Response(status=303, headers={"Location": location, **NO_STORE})
        return await self._authorize(request, _lists(fields))

    async def _authorize(
        self, http: web.Request, params: Mapping[str, Sequence[str]]
    ) -> web.StreamResponse:
        try:
            request, client = self.service.parse(params)
        except NotRedirectable as e:
            return _not_redirectable(e)
        except AuthorizationRefused as e:
            return self._refusal(e)
        try:
            outcome = await self.service.authorize(request, client, await self._session(http))
        except AuthorizationRefused as e:
            return self._refusal(e)
        if isinstance(outcome, CodeIssued):
            return self._code(outcome)
        if isinstance(outcome, ConsentNeeded):
            return self._consent_page(http, outcome)
        return self._sign_in(outcome)

    async def _over_limit(self, http: web.Request) -> web.StreamResponse | None:
        """The 429 page when this client address spent its ``ratelimit.authorize``."""
        if self.limiter is None:
            return None
        address = self.client_address.limit_key(self.client_address.of(http))
        decision = await self.limiter.hit(address)
        return None if decision.allowed else too_many_requests_page(decision.retry_after_seconds)

    async def _session(self, http: web.Request) -> SessionClaims | None:
        token = http.cookies.get(SESSION_COOKIE)
        if not token:
            return None
        try:
            return await self.sessions.verify(token)
        except InvalidSession:
            return None

    def _sign_in(self, needed: SignInNeeded) -> web.StreamResponse:
        request = needed.request
        resume = self._authorize_url(request.parameters())

        def start(provider: str, intent: str) -> str:
            return self.sign_in.url(
                provider,
                intent=intent,
                return_to=resume,
                login_hint=request.login_hint,
            )

        # A fresh login is asked for: only the ways that can prove one are offered.
        names = [
            name
            for name in self.sign_in.callbacks
            if not needed.fresh or name in self.sign_in.proving
        ]
        if request.provider is not None and request.provider in names:
            location = start(request.provider, "login")
            return web.Response(status=302, headers={"Location": location, **NO_STORE})
        if needed.fresh and not names and not self.passkeys:
            return self._refusal(
                AuthorizationRefused(
                    "login_required",
                    "no configured way of signing in can prove a recent login",
                    client=needed.client,
                    redirect_uri=request.redirect_uri,
                    state=request.state,
                    response_mode=request.response_mode,
                )
            )
        choices = [
            ProviderChoice(name, start(name, "login"), start(name, "register")) for name in names
        ]
        passkey = PasskeyChoice(self.issuer, resume) if self.passkeys else None
        return sign_in_page(needed.client.name, choices, fresh=needed.fresh, passkey=passkey)

    def _authorize_url(self, parameters: Iterable[tuple[str, str]]) -> str:
        return f"{self.issuer}{AUTHORIZE_PATH}?{urlencode(list(parameters))}"

    # -- consent --------------------------------------------------------------------------

    def _consent_page(self, http: web.Request, needed: ConsentNeeded) -> web.StreamResponse:
        key = http.cookies.get(CONSENT_COOKIE, "")
        if not _CONSENT_KEY.fullmatch(key):
            key = new_secret()
        issued = str(int(self.service.clock.now().timestamp()))
        granted = needed.seen.isoformat() if needed.seen is not None else ""
        parameters = needed.request.parameters()
        token = _consent_token(key, needed.session.session_id, issued, granted, parameters)
        response = consent_page(
            needed.client.name,
            needed.request.scopes,
            needed.new_scopes,
            action=self.issuer + CONSENT_PATH,
            fields=[*parameters, ("issued", issued), ("granted", granted), ("csrf", token)],
            redirect_uri=needed.request.redirect_uri,
        )
        Cookie(
            CONSENT_COOKIE, key, max_age=CONSENT_TTL_SECONDS, path="/", samesite="Strict"
        ).set_on(response)
        return response

    async def consent(self, call: Call[ConsentForm]) -> web.StreamResponse:
        http = call.request
        fields = _text_fields((await http.post()).items())
        params = _lists(fields)
        try:
            request, client = self.service.parse(params)
        except NotRedirectable as e:
            return _not_redirectable(e)
        except AuthorizationRefused as e:
            return self._refusal(e)
        if not self.guard.allows(http):
            return error_page("The consent form did not come from this site.", status=403)
        session = await self._session(http)
        if session is None:  # signed out meanwhile: the request starts again
            location = self._authorize_url(request.parameters())
            return web.Response(status=303, headers={"Location": location, **NO_STORE})
        if not self._consent_token_valid(http, session, params, request):
            return error_page(
                "This consent form has expired or was not issued to this browser.", status=403
            )
        decision = _one(params, "decision")
        if decision not in ("approve", "deny"):
            return error_page("The consent form must approve or deny.")
        granted = _one(params, "granted") or ""
        try:
            seen = dt.datetime.fromisoformat(granted) if granted else None
            issued = await self.service.consent(
                request, client, session, approved=decision == "approve", seen=seen
            )
        except AuthorizationRefused as e:
            return self._refusal(e)
        except (ConsentAnswered, ValueError):
            return error_page(
                "This consent form was answered already, or the application's access changed "
                "since it was shown. Return to the application and start again.",
                status=409,
            )
        return self._code(issued)

    def _consent_token_valid(
        self,
        http: web.Request,
        session: SessionClaims,
        params: Mapping[str, Sequence[str]],
        request: AuthorizationRequest,
    ) -> bool:
        key = http.cookies.get(CONSENT_COOKIE, "")
        issued = _one(params, "issued") or ""
        granted = _one(params, "granted") or ""
        presented = _one(params, "csrf") or ""
        if not _CONSENT_KEY.fullmatch(key) or not issued.isdigit() or len(issued) > 12:
            return False
        age = self.service.clock.now().timestamp() - int(issued)
        if not -60 <= age <= CONSENT_TTL_SECONDS:
            return False
        expected = _consent_token(key, session.session_id, issued, granted, request.parameters())
        return hmac.compare_digest(expected.encode(), presented.encode())

    # -- answers --------------------------------------------------------------------------

    def _code(self, issued: CodeIssued) -> web.StreamResponse:
        fields = [("code", issued.code)]
        if issued.request.state is not None:
            fields.append(("state", issued.request.state))
        return self._answer(issued.request.redirect_uri, issued.request.response_mode, fields)

    def _refusal(self, e: AuthorizationRefused) -> web.StreamResponse:
        fields = [("error", e.error), ("error_description", e.description)]
        if e.state is not None:
            fields.append(("state", e.state))
        return self._answer(e.redirect_uri, e.response_mode, fields)

    def _answer(
        self, redirect_uri: str, response_mode: str, fields: list[tuple[str, str]]
    ) -> web.StreamResponse:
        fields.append(("iss", self.issuer))
        if response_mode == "form_post":
            return form_post_page(redirect_uri, fields)
        return web.Response(
            status=302, headers={"Location": with_query(redirect_uri, fields), **NO_STORE}
        )


def _not_redirectable(refused: NotRedirectable) -> web.Response:
    """The error page, and the line that says why in the log (the description names the
    client and the redirect_uri as received, quoted: the page escapes them)."""
    log.info("authorize: refused: %s", refused.description)
    return error_page(refused.description)


def with_query(uri: str, fields: Sequence[tuple[str, str]]) -> str:
    """``uri`` with ``fields`` added to its query (a registered URI has no fragment)."""
    if "?" not in uri:
        return f"{uri}?{urlencode(fields)}"
    separator = "" if uri.endswith(("?", "&")) else "&"
    return f"{uri}{separator}{urlencode(fields)}"


def _consent_token(
    key: str, session_id: str, issued: str, granted: str, parameters: Iterable[tuple[str, str]]
) -> str:
    """The consent form's token: an HMAC of the session, when the page was shown, the grant it
    found (``granted``: when it was given, "" for none: its answer is recorded only against
    that grant, so the form is single use) and the request."""
    message = "\n".join([session_id, issued, granted, urlencode(list(parameters))]).encode()
    digest = hmac.new(key.encode(), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _text_fields(items: Iterable[tuple[str, object]]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in items if isinstance(v, str)]


def _lists(items: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, value in items:
        out.setdefault(name, []).append(value)
    return out


def _one(params: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = params.get(name, ())
    return values[0] if len(values) == 1 else None


def _authorize_params() -> list[Param]:
    required = required_by_operation
    return [
        query("response_type", required, description="code (the only response type)."),
        query("client_id", required, description="A registered client."),
        query(
            "redirect_uri",
            required,
            description="One of the client's registered redirect URIs, exactly (a public "
            "client's loopback one on any port).",
        ),
        query("scope", required, description="Space-separated; must include openid."),
        query(
            "code_challenge",
            required,
            description="PKCE: base64url SHA-256 of the code verifier (43 characters).",
        ),
        query("code_challenge_method", required, description="S256 (plain is refused)."),
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
            "request",
            description="Request objects are not supported: request_not_supported.",
        ),
        query(
            "request_uri",
            description="Request objects are not supported: request_uri_not_supported.",
        ),
    ]
