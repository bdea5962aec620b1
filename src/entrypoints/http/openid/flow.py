"""What the authorization endpoint and the consent form share: the browser's session, the request's
fields, and the answers at the client's ``redirect_uri``: always with ``iss`` (RFC 9207), as the
query (302) or a ``form_post`` page. What cannot be redirected (an unknown client, an
unregistered ``redirect_uri``) is an error page."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from urllib.parse import urlencode

import attrs
from aiohttp import web

from authgate.domain.openid.authorization_request import AuthorizationRefused, NotRedirectable
from authgate.entrypoints.http.common.errors import OAUTH_NO_STORE
from authgate.entrypoints.http.common.session_auth import SESSION_COOKIE
from authgate.entrypoints.http.openid.discovery import AUTHORIZE_PATH
from authgate.entrypoints.http.openid.pages import error_page, form_post_page
from authgate.ports.session_tokens import InvalidSession, SessionClaims
from authgate.services.openid.authorization import CodeIssued
from authgate.services.sessions import SessionService

log = logging.getLogger("authgate.security")


@attrs.frozen
class Answers:
    """The authorization responses of ``issuer``, at the client's ``redirect_uri``."""

    issuer: str

    async def refusals_answered(self, work: Awaitable[web.StreamResponse]) -> web.StreamResponse:
        """``work``'s answer, or the error page or ``redirect_uri`` error it raised."""
        try:
            return await work
        except NotRedirectable as e:
            return _not_redirectable(e)
        except AuthorizationRefused as e:
            return self.refusal(e)

    def code(self, issued: CodeIssued) -> web.StreamResponse:
        """The code (and the request's state) at the ``redirect_uri``."""
        fields = [("code", issued.code)]
        if issued.request.state is not None:
            fields.append(("state", issued.request.state))
        return self._answer(issued.request.redirect_uri, issued.request.response_mode, fields)

    def refusal(self, e: AuthorizationRefused) -> web.StreamResponse:
        """The error (and the request's state) at the ``redirect_uri``."""
        fields = [("error", e.error), ("error_description", e.description)]
        if e.state is not None:
            fields.append(("state", e.state))
        return self._answer(e.redirect_uri, e.response_mode, fields)

    def authorize_url(self, parameters: Iterable[tuple[str, str]]) -> str:
        """The authorization endpoint's address with ``parameters`` as its query."""
        return f"{self.issuer}{AUTHORIZE_PATH}?{urlencode(list(parameters))}"

    def _answer(
        self, redirect_uri: str, response_mode: str, fields: list[tuple[str, str]]
    ) -> web.StreamResponse:
        fields.append(("iss", self.issuer))
        if response_mode == "form_post":
            return form_post_page(redirect_uri, fields)
        return see(with_query(redirect_uri, fields), status=302)


def see(location: str, *, status: int) -> web.Response:
    """A redirect to ``location`` (302, or 303 to turn a POST into a GET), never cached."""
    return web.Response(status=status, headers={"Location": location, **OAUTH_NO_STORE})


def _not_redirectable(refused: NotRedirectable) -> web.Response:
    """The error page, and why in the log."""
    log.info("authorize: refused: %s", refused.description)
    return error_page(refused.description)


def with_query(uri: str, fields: Sequence[tuple[str, str]]) -> str:
    """``uri`` with ``fields`` added to its query (a registered URI has no fragment)."""
    if "?" not in uri:
        return f"{uri}?{urlencode(fields)}"
    separator = "" if uri.endswith(("?", "&")) else "&"
    return f"{uri}{separator}{urlencode(fields)}"


async def browser_session(sessions: SessionService, http: web.Request) -> SessionClaims | None:
    """The live session of the browser's ``session`` cookie, if any."""
    token = http.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    try:
        return await sessions.verify(token)
    except InvalidSession:
        return None


async def form_fields(http: web.Request) -> list[tuple[str, str]]:
    """The text fields of a posted form, in order (repeated ones repeated)."""
    return [(k, v) for k, v in (await http.post()).items() if isinstance(v, str)]


def lists(items: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Each name's values, in order."""
    out: dict[str, list[str]] = {}
    for name, value in items:
        out.setdefault(name, []).append(value)
    return out


def one(params: Mapping[str, Sequence[str]], name: str) -> str | None:
    """The value of a parameter given exactly once, else None."""
    values = params.get(name, ())
    return values[0] if len(values) == 1 else None
