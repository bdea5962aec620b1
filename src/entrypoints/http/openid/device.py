"""The device authorization grant's two HTTP faces (RFC 8628): ``POST
/oauth2/device_authorization``, where a device (a command-line tool, a television) asks and
gets its codes, and the verification page ``GET|POST /oauth2/device``, where the person types
the user code, signs in if need be (the authorization endpoint's sign-in page, resuming this
page) and approves or denies.

The page's form must pass the same-origin guard and carry a token: the HMAC of the session,
the time shown and the user code under a random key in a ``__Host-`` SameSite=Strict cookie,
as the consent form's. A request is answered once (pending, then approved or denied).

User codes are eight letters of twenty (20^8, about 2.6e10): every page request naming a code
spends ``ratelimit.device`` of the client address, and every code that finds nothing spends
``ratelimit.device_failures``, which once spent refuses the address's codes for the rest of
its window (docs/openid-provider.md, "Devices and command-line tools")."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
from html import escape
from urllib.parse import urlencode

import attrs
from aiohttp import web

from authgate.domain.openid.device import shown_user_code
from authgate.domain.openid.refusals import (
    InvalidClient,
    InvalidScope,
    OAuthRateLimited,
    UnauthorizedClient,
)
from authgate.domain.secrets import new_secret
from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import FORM, OAuthErrorBody, oauth_form
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.errors import OAUTH_NO_STORE, oauth_example
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.common.session_auth import SameOriginGuard
from authgate.entrypoints.http.openid.authorize import SignInStart
from authgate.entrypoints.http.openid.discovery import (
    DEVICE_AUTHORIZATION_PATH,
    ProviderOperations,
)
from authgate.entrypoints.http.openid.flow import browser_session, form_fields, lists, one, see
from authgate.entrypoints.http.openid.pages import (
    PasskeyChoice,
    ProviderChoice,
    error_page,
    hidden_fields,
    html_page,
    over_limit_page,
    scope_words,
    sign_in_page,
)
from authgate.entrypoints.rest import Call, Cookie, Reply, query
from authgate.ports.ratelimit import RateLimiter
from authgate.ports.session_tokens import SessionClaims
from authgate.services.openid.client_authentication import ClientAuthentication
from authgate.services.openid.device import (
    DeviceAuthorizationService,
    DeviceRequest,
    DeviceRequestUnknown,
)
from authgate.services.sessions import SessionService

log = logging.getLogger("authgate.openid")

DEVICE_PATH = "/oauth2/device"
# The browser's key of the verification page's forms (as the consent form's).
DEVICE_COOKIE = "__Host-authgate_device"
DEVICE_FORM_TTL_SECONDS = 600
_KEY = re.compile(r"[A-Za-z0-9_-]{43}")


@attrs.frozen
class DeviceAuthorizationForm:
    """The device authorization request (RFC 8628 section 3.1), with the client's
    authentication as at the token endpoint."""

    client_id: str | None = None
    scope: str | None = None
    client_secret: str | None = None
    client_assertion_type: str | None = None
    client_assertion: str | None = None


@attrs.frozen
class DeviceAuthorizationResponse:
    """RFC 8628 section 3.2."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: int
    interval: int


@attrs.frozen
class DeviceForm:
    """The verification page's form: the code, the page's token and the decision."""

    user_code: str | None = None
    issued: str | None = None
    csrf: str | None = None
    decision: str | None = None


@attrs.frozen
class DeviceLimits:
    """The verification page's budgets, per client address: ``requests`` every request
    naming a code (and every device authorization request), ``failures`` the codes that
    found nothing."""

    requests: RateLimiter
    failures: RateLimiter


@attrs.define(slots=False, eq=False)
class DeviceOperations(ProviderOperations):
    """The device authorization endpoint and the verification page."""

    service: DeviceAuthorizationService
    client_auth: ClientAuthentication
    sessions: SessionService
    guard: SameOriginGuard
    sign_in: SignInStart
    limits: DeviceLimits
    client_address: ClientAddress
    passkeys: bool = False  # the sign-in page offers passkeys

    @property
    def issuer(self) -> str:
        return self.sign_in.issuer

    @operation(
        "POST",
        DEVICE_AUTHORIZATION_PATH,
        raw_body={FORM: DeviceAuthorizationForm},
        response=DeviceAuthorizationResponse,
        responses={status: OAuthErrorBody for status in (400, 401, 429, 503)},
        operation_id="device_authorization",
        summary="Device authorization endpoint (RFC 8628)",
        description="A device or command-line tool asks for authorization: it gets a device "
        "code to poll the token endpoint with (grant_type "
        "urn:ietf:params:oauth:grant-type:device_code) and a user code the person types at "
        "verification_uri. Only for clients registered with that grant type, authenticated as "
        "at the token endpoint (client_id alone for a public client). Never cached.",
        examples=docs.error_examples(
            oauth_example(InvalidClient("example")),
            oauth_example(
                UnauthorizedClient("the client may not use the device authorization grant")
            ),
            oauth_example(InvalidScope("scope must include openid")),
            oauth_example(OAuthRateLimited(1)),
        ),
    )
    async def device_authorization(self, call: Call[bytes]) -> Reply[DeviceAuthorizationResponse]:
        request = call.request
        address = self.client_address.limit_key(self.client_address.of(request))
        decision = await self.limits.requests.hit(address)
        if not decision.allowed:
            raise OAuthRateLimited(decision.retry_after_seconds)
        form = oauth_form(request.content_type, call.body)
        client = await self.client_auth.authenticate(request.headers.get("Authorization"), form)
        started = await self.service.start(client, form.get("scope"))
        shown = shown_user_code(started.user_code)
        page = self.issuer + DEVICE_PATH
        return Reply(
            DeviceAuthorizationResponse(
                device_code=started.device_code,
                user_code=shown,
                verification_uri=page,
                verification_uri_complete=f"{page}?{urlencode({'user_code': shown})}",
                expires_in=started.expires_in,
                interval=started.interval,
            ),
            headers=OAUTH_NO_STORE,
        )

    @operation(
        "GET",
        DEVICE_PATH,
        params=[
            query(
                "user_code",
                description="The code the device shows (case, dashes and spaces do not matter).",
            )
        ],
        status=200,
        responses={
            200: "An HTML page (text/html): the code's form, the sign-in page, or the request "
            "to approve",
            400: "The code's form again: the code is unknown, expired or answered already",
            429: "An HTML page with Retry-After: too many codes from this client address "
            "(ratelimit.device, ratelimit.device_failures)",
        },
        operation_id="device_verification",
        summary="Device verification page (RFC 8628)",
        description="Where the person types the code their device shows, signs in if need "
        "be, and sees which application asks for what before approving or denying.",
    )
    async def page(self, call: Call[None]) -> web.StreamResponse:
        http = call.request
        typed = http.query.get("user_code")
        if not typed:
            return code_page(self.issuer)
        found = await self._found(http, typed)
        if not isinstance(found, DeviceRequest):
            return found
        session = await browser_session(self.sessions, http)
        if session is None or not session.session_id:
            return self._sign_in(found)
        return self._approval(http, found, session)

    @operation(
        "POST",
        DEVICE_PATH,
        form=DeviceForm,
        status=200,
        responses={
            200: "An HTML page: the device is connected, or the request was denied",
            303: "Back to the page (the session ended meanwhile)",
            400: "The code's form again: the code is unknown, expired or answered already",
            403: "An HTML error page: the form did not come from this page in this browser "
            "and session, or is older than ten minutes",
            429: "An HTML page with Retry-After (ratelimit.device, ratelimit.device_failures)",
        },
        operation_id="device_decision",
        summary="Approve or deny a device",
        description="The verification page posts the code with its token and decision=approve "
        "or decision=deny. Same-origin only.",
    )
    async def decide(self, call: Call[DeviceForm]) -> web.StreamResponse:
        http = call.request
        params = lists(await form_fields(http))
        typed = one(params, "user_code") or ""
        if not self.guard.allows(http):
            return error_page("The form did not come from this site.", status=403)
        found = await self._found(http, typed)
        if not isinstance(found, DeviceRequest):
            return found
        session = await browser_session(self.sessions, http)
        if session is None or not session.session_id:
            return see(self._page_url(found.user_code), status=303)
        key = http.cookies.get(DEVICE_COOKIE, "")
        issued = one(params, "issued") or ""
        presented = one(params, "csrf") or ""
        if not self._token_valid(key, session, issued, found.user_code, presented):
            return error_page("This form has expired or was not shown to this browser.", status=403)
        decision = one(params, "decision")
        if decision not in ("approve", "deny"):
            return error_page("The form must approve or deny.")
        try:
            await self.service.decide(found, session, approved=decision == "approve")
        except DeviceRequestUnknown:
            return code_page(self.issuer, problem=_UNKNOWN, status=400)
        return done_page(found.client.name, approved=decision == "approve")

    async def _found(self, http: web.Request, typed: str) -> DeviceRequest | web.StreamResponse:
        """The pending request of the code typed, or the page that refuses it: over the
        address's budgets (429), or unknown (the code's form again, a failure counted)."""
        refused = await over_limit_page(self.limits.requests, self.client_address, http)
        if refused is not None:
            return refused
        address = self.client_address.limit_key(self.client_address.of(http))
        failures = await self.limits.failures.peek(address)
        if not failures.allowed:
            return _too_many(failures.retry_after_seconds)
        try:
            return await self.service.find(typed[:64])
        except DeviceRequestUnknown:
            await self.limits.failures.hit(address)
            log.info("device verification: a code that finds no pending request")
            return code_page(self.issuer, problem=_UNKNOWN, status=400)

    def _page_url(self, user_code: str) -> str:
        return f"{self.issuer}{DEVICE_PATH}?{urlencode({'user_code': shown_user_code(user_code)})}"

    def _sign_in(self, found: DeviceRequest) -> web.StreamResponse:
        """The authorization endpoint's sign-in page, each way back resuming this page."""
        resume = self._page_url(found.user_code)
        choices = [
            ProviderChoice(
                name,
                self.sign_in.url(name, intent="login", return_to=resume, login_hint=None),
                self.sign_in.url(name, intent="register", return_to=resume, login_hint=None),
            )
            for name in self.sign_in.callbacks
        ]
        passkey = PasskeyChoice(self.issuer, resume) if self.passkeys else None
        return sign_in_page(found.client.name, choices, fresh=False, passkey=passkey)

    def _approval(
        self, http: web.Request, found: DeviceRequest, session: SessionClaims
    ) -> web.StreamResponse:
        """The request to approve, with its form's token, and this browser's key."""
        key = http.cookies.get(DEVICE_COOKIE, "")
        if not _KEY.fullmatch(key):
            key = new_secret()
        issued = str(int(self.service.clock.now().timestamp()))
        token = _form_token(key, session.session_id, issued, found.user_code)
        response = approval_page(
            found,
            action=self.issuer + DEVICE_PATH,
            fields=[
                ("user_code", shown_user_code(found.user_code)),
                ("issued", issued),
                ("csrf", token),
            ],
        )
        Cookie(DEVICE_COOKIE, key, max_age=DEVICE_FORM_TTL_SECONDS, samesite="Strict").set_on(
            response
        )
        return response

    def _token_valid(
        self, key: str, session: SessionClaims, issued: str, user_code: str, presented: str
    ) -> bool:
        if not _KEY.fullmatch(key) or not issued.isdigit() or len(issued) > 12:
            return False
        age = self.service.clock.now().timestamp() - int(issued)
        if not -60 <= age <= DEVICE_FORM_TTL_SECONDS:
            return False
        expected = _form_token(key, session.session_id, issued, user_code)
        return hmac.compare_digest(expected.encode(), presented.encode())


_UNKNOWN = (
    "That code is not valid: it may be mistyped, expired or used already. Check the code your "
    "device shows, or start again on the device."
)


def _form_token(key: str, session_id: str, issued: str, user_code: str) -> str:
    """The form's token: an HMAC of the session, when the page was shown and the code."""
    message = "\n".join([session_id, issued, user_code]).encode()
    digest = hmac.new(key.encode(), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def code_page(issuer: str, *, problem: str | None = None, status: int = 200) -> web.Response:
    """The form where the person types the code their device shows."""
    message = f'<p class="message problem" role="alert">{escape(problem)}</p>' if problem else ""
    body = (
        "<h1>Connect a device</h1>"
        "<p>Enter the code shown on your device or in your terminal.</p>"
        f"{message}"
        f'<form method="get" action="{escape(issuer + DEVICE_PATH)}">'
        '<p class="field"><label for="user_code">Code</label> '
        '<input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" '
        'spellcheck="false" placeholder="XXXX-XXXX" required></p>'
        '<div class="actions"><button type="submit">Continue</button></div></form>'
    )
    return html_page("Connect a device", body, status=status, referrer="no-referrer")


def approval_page(
    found: DeviceRequest, *, action: str, fields: list[tuple[str, str]]
) -> web.Response:
    """The request as the person approves or denies it: the application, the code (to compare
    with the device's) and what it asks for, in words."""
    app = escape(found.client.name)
    code = escape(shown_user_code(found.user_code))
    items = "".join(f"<li>{escape(scope_words(s))}</li>" for s in found.authorization.scopes)
    body = (
        f"<h1>Connect {app}?</h1>"
        f"<p>A device asks to use your account through <strong>{app}</strong> with the code "
        f'<strong class="code">{code}</strong>. Check that your device shows the same code.</p>'
        f'<p><strong>{app}</strong> would like to:</p><ul class="scopes">{items}</ul>'
        f'<form method="post" action="{escape(action)}">{hidden_fields(fields)}'
        '<div class="actions">'
        '<button type="submit" name="decision" value="approve">Allow</button>'
        '<button class="secondary" type="submit" name="decision" value="deny">Deny</button>'
        "</div></form>"
        '<p class="note">Only allow a device you started this on yourself: if someone sent '
        "you this code, deny.</p>"
    )
    # The provider pages' same-origin referrer policy: under no-referrer a browser posts the
    # form with "Origin: null", which the same-origin guard refuses.
    return html_page(f"Connect {found.client.name}?", body)


def done_page(client_name: str, *, approved: bool) -> web.Response:
    """The answer recorded: the person goes back to the device."""
    app = escape(client_name)
    if approved:
        body = (
            "<h1>Device connected</h1>"
            f"<p><strong>{app}</strong> can now use your account. Return to your device.</p>"
        )
    else:
        body = "<h1>Request denied</h1><p>Nothing was connected. You can close this page.</p>"
    return html_page(
        "Device connected" if approved else "Request denied", body, form_action="'none'"
    )


def _too_many(seconds: int) -> web.Response:
    body = (
        "<h1>Too many codes</h1>"
        f"<p>Too many codes that were not valid came from your network. Try again in {seconds} "
        "seconds.</p>"
    )
    page = html_page(
        "Too many codes", body, status=429, form_action="'none'", referrer="no-referrer"
    )
    page.headers["Retry-After"] = str(seconds)
    return page
