"""Sliding sessions: an answer to a caller authenticated by a ``session`` cookie past half its
lifetime carries the renewed cookie. Never a public document's: a shared cache could hand one
browser's session to the next."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from authgate.entrypoints.http.common.session_auth import SESSION_COOKIE, SESSION_COOKIE_SCHEME
from authgate.entrypoints.rest import AUTHENTICATED, Cookie
from authgate.entrypoints.rest.call import sets_cookie
from authgate.ports.session_tokens import InvalidSession
from authgate.services.sessions import SessionService

log = logging.getLogger("authgate.sessions")


def renewal_hook(
    sessions: SessionService,
) -> Callable[[web.Request, web.StreamResponse], Awaitable[None] | None]:
    """The API's ``after_response`` hook: None (nothing to await) unless the caller was
    authenticated by the session cookie and the success does not set it."""

    def due(request: web.Request, response: web.StreamResponse) -> Awaitable[None] | None:
        if SESSION_COOKIE not in request.cookies:
            return None  # the common case first: no cookie at all
        principal = request.get(AUTHENTICATED)
        if principal is None or principal.scheme != SESSION_COOKIE_SCHEME:
            return None  # a public answer, or the bearer token was the credential
        token = request.cookies[SESSION_COOKIE]
        if (
            not token
            or response.status >= 400
            or sets_cookie(response, SESSION_COOKIE)
            or response.prepared
        ):
            return None
        return renew(token, response)

    async def renew(token: str, response: web.StreamResponse) -> None:
        try:
            claims = await sessions.verify(token)
            renewed = await sessions.renew_if_due(claims)
        except InvalidSession:
            return
        except Exception:  # renewal is a courtesy: never turn an answer into a failure
            log.exception("session renewal failed")
            return
        if renewed is not None:
            max_age = int((renewed.expires_at - sessions.clock.now()).total_seconds())
            Cookie(SESSION_COOKIE, renewed.token, max_age=max(max_age, 0)).set_on(response)

    return due
