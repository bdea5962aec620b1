"""``GET|POST /oauth2/logout`` (OpenID Connect RP-Initiated Logout 1.0) and ``POST
/oauth2/logout/confirm``, the confirmation it may ask for.

What a request earns is :class:`~authgate.services.openid.end_session.RpInitiatedLogout`'s
decision; the session ends as ``POST /v1/auth/logout`` ends it, clients told by back-channel
logout. The confirmation is CSRF-safe without relying on SameSite alone: its form's random token
must equal the ``__Host-authgate_logout`` cookie (double submit; ``__Host-``: no sibling domain
plants one), and a reported ``Origin`` must be this service's. Both count against
``ratelimit.logout`` first.

The pages' ``Referrer-Policy`` is ``same-origin``, not ``no-referrer``: under ``no-referrer`` a
browser sends ``Origin: null`` with the confirmation's post, which the same-origin check must
refuse."""

from __future__ import annotations

import contextlib
import functools
import hmac
import html
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from aiohttp import web

from authgate.domain.secrets import new_secret
from authgate.entrypoints.http.common.binding import signed_out_cookies
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.errors import CALLBACK_HEADERS
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.common.session_auth import SESSION_COOKIE, SameOriginGuard
from authgate.entrypoints.http.openid.discovery import END_SESSION_PATH, ProviderOperations
from authgate.entrypoints.http.openid.flow import browser_session
from authgate.entrypoints.http.openid.pages import (
    form_action_source,
    hidden_fields,
    html_page,
    over_limit_page,
)
from authgate.entrypoints.rest import Call, Cookie, Param, RawResponse, query
from authgate.ports.ratelimit import RateLimiter
from authgate.ports.session_tokens import InvalidSession
from authgate.services.openid.end_session import (
    BrowserSession,
    EndSessionDecision,
    EndSessionRequest,
    RpInitiatedLogout,
    Verdict,
)
from authgate.services.sessions import SessionService

CONFIRM_PATH = END_SESSION_PATH + "/confirm"
CSRF_COOKIE = "__Host-authgate_logout"
CSRF_FIELD = "csrf"
CSRF_MAX_AGE = 600  # seconds a confirmation page may stay open
_CSRF_FORMAT = re.compile(r"[A-Za-z0-9_-]{32,128}")
PARAMETERS = ("id_token_hint", "client_id", "post_logout_redirect_uri", "state")
# Form actions relative to the page's own address, so that a path prefix in front of the
# service (rest.public_url with a path) is kept.
_ACTION_FROM_ENDPOINT = END_SESSION_PATH.rsplit("/", 1)[1] + "/confirm"
_ACTION_FROM_CONFIRMATION = "confirm"


@attrs.frozen
class EndSessionForm:
    """The end-session request as a form post (RP-Initiated Logout 1.0 section 2)."""

    id_token_hint: str | None = None
    client_id: str | None = None
    post_logout_redirect_uri: str | None = None
    state: str | None = None
    ui_locales: str | None = None  # accepted and ignored: the pages are in English


@attrs.frozen
class ConfirmationForm:
    """The confirmation page's form: the request as it came, and the confirmation token."""

    csrf: str | None = None
    id_token_hint: str | None = None
    client_id: str | None = None
    post_logout_redirect_uri: str | None = None
    state: str | None = None


_BACK = (
    "Signed out (or nothing to end): back to the registered post_logout_redirect_uri, with "
    "state when one was sent"
)
_ANSWERS: dict[int, type | str | RawResponse] = {
    302: _BACK,
    200: RawResponse(
        "An HTML page: the confirmation asked before signing out (the request did not carry an "
        "id_token_hint of this browser's session, or failed a check), or the signed-out page"
    ),
    429: RawResponse(
        "An HTML page with Retry-After: too many requests from this client address "
        "(ratelimit.logout); nothing ended"
    ),
}
_DESCRIPTION = (
    "OpenID Connect RP-Initiated Logout 1.0. With an id_token_hint this provider issued in the "
    "browser's own session, the session ends at once (every client that received tokens in it "
    "is told by back-channel logout); any other request asks the person first. The browser "
    "goes back to post_logout_redirect_uri only when it is one the client registered, exactly, "
    "and the request identifies that client (a valid id_token_hint or its client_id, the same "
    "client in both); otherwise it stays on the signed-out page. An expired id_token_hint "
    "still identifies the session; ui_locales and unknown parameters are ignored."
)
_DECLARATION: dict[str, Any] = {
    "status": 200,
    "summary": "End the browser's authgate session (RP-initiated logout)",
    "description": _DESCRIPTION,
}
# The request's parameters in the query (RP-Initiated Logout 1.0 section 2).
END_SESSION_PARAMS: tuple[Param, ...] = (
    query("id_token_hint", description="An ID token this provider issued to the client."),
    query("client_id", description="The client asking (must be the hint's audience)."),
    query(
        "post_logout_redirect_uri",
        description="Where to go once signed out: one of the client's registered "
        "post_logout_redirect_uris, exactly.",
    ),
    query("state", description="Returned unchanged with the redirect."),
    query("ui_locales", description="Accepted and ignored."),
)


def _request_of(get: Callable[[str], str | None]) -> EndSessionRequest:
    """The request's parameters (``get`` reads one); an empty value is an absent one."""
    return EndSessionRequest(**{name: get(name) or None for name in PARAMETERS})


@attrs.define(slots=False, eq=False)
class LogoutOperations(ProviderOperations):
    """The end-session endpoint and its confirmation."""

    decisions: RpInitiatedLogout
    sessions: SessionService
    client_address: ClientAddress
    guard: SameOriginGuard
    limiter: RateLimiter | None = None  # ratelimit.logout, per client address

    @operation(
        "GET",
        END_SESSION_PATH,
        params=list(END_SESSION_PARAMS),
        responses=_ANSWERS,
        operation_id="end_session",
        **_DECLARATION,
    )
    @operation(
        "POST",
        END_SESSION_PATH,
        form=EndSessionForm,
        responses={200: _ANSWERS[200], 303: _BACK, 429: _ANSWERS[429]},
        operation_id="end_session_form",
        **_DECLARATION,
    )
    async def end_session(self, call: Call[EndSessionForm | None]) -> web.StreamResponse:
        request = call.request
        refused = await over_limit_page(self.limiter, self.client_address, request)
        if refused is not None:
            return refused
        form = call.body
        asked = _request_of(call.params.first if form is None else functools.partial(getattr, form))
        browser, token = await self._browser_session(request)
        decision = await self.decisions.decide(
            asked, browser, session_visible=_cookies_visible(request)
        )
        if decision.verdict is Verdict.CONFIRM:
            return self._confirmation(asked, decision, _ACTION_FROM_ENDPOINT)
        return await self._finish(request, decision, token, status=303 if call.body else 302)

    @operation(
        "POST",
        CONFIRM_PATH,
        form=ConfirmationForm,
        status=200,
        responses={
            200: RawResponse("An HTML page: signed out"),
            303: _BACK,
            403: RawResponse(
                "An HTML page: the confirmation could not be verified (its token does not "
                "match this browser's, or another site sent it); nothing ended, the "
                "confirmation is asked again"
            ),
            429: _ANSWERS[429],
        },
        operation_id="confirm_end_session",
        summary="Confirm signing out (the end-session endpoint's confirmation page)",
        description="The form of the confirmation page the end-session endpoint shows: ends "
        "the browser's session, then goes back to the client when the original request earned "
        "it, else shows the signed-out page.",
    )
    async def confirm(self, call: Call[ConfirmationForm]) -> web.StreamResponse:
        request = call.request
        refused = await over_limit_page(self.limiter, self.client_address, request)
        if refused is not None:
            return refused
        form = call.body
        asked = _request_of(functools.partial(getattr, form))
        sent = request.cookies.get(CSRF_COOKIE, "")
        given = form.csrf or ""
        genuine = (
            _CSRF_FORMAT.fullmatch(sent) is not None
            and hmac.compare_digest(sent.encode(), given.encode())
            and ("Origin" not in request.headers or self.guard.allows(request))
        )
        browser, token = await self._browser_session(request)
        if not genuine:
            decision = await self.decisions.decide(asked, browser, session_visible=False)
            return self._confirmation(
                asked,
                attrs.evolve(
                    decision,
                    problem="This sign-out could not be verified: nothing was ended. Confirm "
                    "again to sign out.",
                ),
                _ACTION_FROM_CONFIRMATION,
                status=403,
            )
        decision = await self.decisions.decide(asked, browser, session_visible=True, confirmed=True)
        response = await self._finish(request, decision, token, status=303)
        Cookie(CSRF_COOKIE, "", max_age=0, samesite="Strict").set_on(response)
        return response

    async def _browser_session(
        self, request: web.Request
    ) -> tuple[BrowserSession | None, str | None]:
        """The live session the browser's cookie names, and the cookie's token."""
        claims = await browser_session(self.sessions, request)
        browser = BrowserSession(claims.account_id, claims.session_id) if claims else None
        return browser, request.cookies.get(SESSION_COOKIE) or None

    def _confirmation(
        self,
        asked: EndSessionRequest,
        decision: EndSessionDecision,
        action: str,
        *,
        status: int = 200,
    ) -> web.Response:
        csrf = new_secret()
        given = {name: getattr(asked, name) for name in PARAMETERS}
        fields = {CSRF_FIELD: csrf, **{k: v for k, v in given.items() if v is not None}}
        page = confirmation_page(
            action=action,
            fields=fields,
            client_name=decision.client.name if decision.client is not None else None,
            problem=decision.problem,
            redirect=decision.redirect,
            status=status,
        )
        Cookie(CSRF_COOKIE, csrf, max_age=CSRF_MAX_AGE, samesite="Strict").set_on(page)
        return page

    async def _finish(
        self,
        request: web.Request,
        decision: EndSessionDecision,
        token: str | None,
        *,
        status: int,
    ) -> web.Response:
        """End the session when the decision says so, go back or show the signed-out page, and
        clear the cookies either way."""
        if decision.verdict is Verdict.END and token is not None:
            client = self.client_address.client(request)
            detail = "end-session endpoint"
            if decision.client is not None:
                detail += f"; client {decision.client.client_id}"
            with contextlib.suppress(InvalidSession):  # ended meanwhile: the purpose is achieved
                await self.sessions.sign_out(token, client=client, detail=detail)
        if decision.redirect is not None:  # 302 after a GET, 303 after a form post
            response = web.Response(
                status=status, headers={"Location": decision.redirect, **CALLBACK_HEADERS}
            )
        else:
            response = signed_out_page(problem=decision.problem)
        for cookie in signed_out_cookies():
            cookie.set_on(response)
        return response


def _cookies_visible(request: web.Request) -> bool:
    """Whether the browser would have sent its SameSite=Lax session cookie: with a GET, and
    with a post from this service's own pages, not another site's."""
    if request.method == "GET" or SESSION_COOKIE in request.cookies:
        return True
    site = request.headers.get("Sec-Fetch-Site", "").lower()
    return site in ("same-origin", "none")


def _page(title: str, body: str, *, status: int, form_targets: Iterable[str] = ()) -> web.Response:
    # form_targets: where a confirmed sign-out may be redirected.
    sources = ["'self'", *sorted({form_action_source(t) for t in form_targets})]
    return html_page(f"{title} · authgate", body, status=status, form_action=" ".join(sources))


def _notice(problem: str | None, *, done: bool = False) -> str:
    """A problem before the sign-out; after one (``done``), a neutral note."""
    if problem is None:
        return ""
    if done:
        return f'<p class="message neutral" role="status">{html.escape(problem)}</p>\n'
    return f'<p class="message problem" role="alert">{html.escape(problem)}</p>\n'


def confirmation_page(
    *,
    action: str,
    fields: Mapping[str, str],
    client_name: str | None,
    problem: str | None,
    redirect: str | None,
    status: int = 200,
) -> web.Response:
    """Asks the person to confirm the sign-out: a form that posts ``fields`` to ``action``.
    ``redirect``: where a confirmed sign-out goes (None: the signed-out page)."""
    who = (
        f"<p>{html.escape(client_name)} asks authgate to sign you out.</p>\n" if client_name else ""
    )
    hidden = hidden_fields(fields.items())
    after = (
        "<p>You will then go back to the application.</p>\n"
        if redirect is not None
        else "<p>You will stay on authgate's signed-out page.</p>\n"
    )
    body = (
        "<h1>Sign out of authgate?</h1>\n"
        f"{who}{_notice(problem)}"
        "<p>This ends your authgate session in this browser. The applications you signed in "
        "to through it are told that you signed out.</p>\n"
        f"{after}"
        f'<form method="post" action="{html.escape(action)}">\n{hidden}'
        '<button type="submit">Sign out</button>\n</form>\n'
    )
    targets = [redirect] if redirect is not None else []
    return _page("Sign out?", body, status=status, form_targets=targets)


def signed_out_page(*, problem: str | None = None) -> web.Response:
    """The sign-out is done (or there was nothing to end in this browser)."""
    body = (
        "<h1>You are signed out</h1>\n"
        f"{_notice(problem, done=True)}"
        "<p>Your authgate session in this browser has ended. You can close this window.</p>\n"
    )
    return _page("Signed out", body, status=200)
