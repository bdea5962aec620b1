"""``POST /oauth2/consent``: the answer to the consent page the authorization endpoint shows,
and that page.

The form must pass the same-origin guard and carry a token: the HMAC of the request, the session
and the time shown, under a random key in a ``__Host-`` SameSite=Strict cookie that another site
can neither read nor make the browser send. Single use: the token names the grant it found."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlencode

import attrs
from aiohttp import web

from authgate.domain.openid.authorization_request import AuthorizationRequest
from authgate.domain.secrets import new_secret
from authgate.entrypoints.http.common.operations import operation
from authgate.entrypoints.http.common.session_auth import SameOriginGuard
from authgate.entrypoints.http.openid.discovery import ProviderOperations
from authgate.entrypoints.http.openid.flow import (
    Answers,
    browser_session,
    form_fields,
    lists,
    one,
    see,
)
from authgate.entrypoints.http.openid.pages import consent_page, document_host, error_page
from authgate.entrypoints.rest import Call, Cookie
from authgate.ports.session_tokens import SessionClaims
from authgate.services.openid.authorization import (
    AuthorizationService,
    ConsentAnswered,
    ConsentNeeded,
)
from authgate.services.sessions import SessionService

CONSENT_PATH = "/oauth2/consent"
# The browser's key of consent forms: __Host- (Secure, Path=/, no Domain) so that no sibling
# sub-domain can plant one; Strict: sent only with authgate's own pages' requests.
CONSENT_COOKIE = "__Host-authgate_consent"
CONSENT_TTL_SECONDS = 600
_CONSENT_KEY = re.compile(r"[A-Za-z0-9_-]{43}")
_ANSWERED = (
    "This consent form was answered already, or the application's access changed since it was "
    "shown. Return to the application and start again."
)


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


@attrs.define(slots=False, eq=False)
class ConsentOperations(ProviderOperations):
    """The consent form, and the page that posts it."""

    service: AuthorizationService
    sessions: SessionService
    guard: SameOriginGuard
    answers: Answers

    def page(self, http: web.Request, needed: ConsentNeeded) -> web.StreamResponse:
        """The consent page for ``needed``, with its token, and this browser's key."""
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
            action=self.answers.issuer + CONSENT_PATH,
            fields=[*parameters, ("issued", issued), ("granted", granted), ("csrf", token)],
            redirect_uri=needed.request.redirect_uri,
            described_by=document_host(needed.client),
            resources=needed.request.resources,
        )
        Cookie(CONSENT_COOKIE, key, max_age=CONSENT_TTL_SECONDS, samesite="Strict").set_on(response)
        return response

    @operation(
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
            403: "An HTML error page: the form did not come from authgate's consent page in "
            "this browser and session, or is older than ten minutes",
            409: "An HTML error page: the form was answered already, or the application's "
            "access changed since it was shown (a consent form is single use)",
        },
        operation_id="consent",
        summary="Answer the consent page",
        description="The consent page posts the authorization request back with its token and "
        "decision=approve or decision=deny. Same-origin only.",
    )
    async def consent(self, call: Call[ConsentForm]) -> web.StreamResponse:
        http = call.request
        return await self.answers.refusals_answered(
            self._consent(http, lists(await form_fields(http)))
        )

    async def _consent(
        self, http: web.Request, params: Mapping[str, Sequence[str]]
    ) -> web.StreamResponse:
        request, client = await self.service.parse(params)
        if not self.guard.allows(http):
            return error_page("The consent form did not come from this site.", status=403)
        session = await browser_session(self.sessions, http)
        if session is None:  # signed out meanwhile: the request starts again
            return see(self.answers.authorize_url(request.parameters()), status=303)
        if not self._token_valid(http, session, params, request):
            return error_page(
                "This consent form has expired or was not issued to this browser.", status=403
            )
        decision = one(params, "decision")
        if decision not in ("approve", "deny"):
            return error_page("The consent form must approve or deny.")
        granted = one(params, "granted") or ""
        try:
            seen = dt.datetime.fromisoformat(granted) if granted else None
            issued = await self.service.consent(
                request, client, session, approved=decision == "approve", seen=seen
            )
        except (ConsentAnswered, ValueError):
            return error_page(_ANSWERED, status=409)
        return self.answers.code(issued)

    def _token_valid(
        self,
        http: web.Request,
        session: SessionClaims,
        params: Mapping[str, Sequence[str]],
        request: AuthorizationRequest,
    ) -> bool:
        key = http.cookies.get(CONSENT_COOKIE, "")
        issued = one(params, "issued") or ""
        granted = one(params, "granted") or ""
        presented = one(params, "csrf") or ""
        if not _CONSENT_KEY.fullmatch(key) or not issued.isdigit() or len(issued) > 12:
            return False
        age = self.service.clock.now().timestamp() - int(issued)
        if not -60 <= age <= CONSENT_TTL_SECONDS:
            return False
        expected = _consent_token(key, session.session_id, issued, granted, request.parameters())
        return hmac.compare_digest(expected.encode(), presented.encode())


def _consent_token(
    key: str, session_id: str, issued: str, granted: str, parameters: Iterable[tuple[str, str]]
) -> str:
    """The consent form's token: an HMAC of the session, when the page was shown, the grant it
    found (``granted``: when it was given, "" for none: its answer is recorded only against
    that grant, so the form is single use) and the request."""
    message = "\n".join([session_id, issued, granted, urlencode(list(parameters))]).encode()
    digest = hmac.new(key.encode(), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
