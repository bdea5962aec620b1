"""An aiohttp middleware that verifies authgate's session on every request of an application.

verifier = SessionVerifier.for_service("https://auth.example.com",
                                       issuer="authgate", audience="authgate")
app = web.Application(middlewares=[session_middleware(verifier, required_scopes={"account:read"})])

async def handler(request: web.Request) -> web.Response:
    session = request[SESSION_KEY]          # or session_of(request)
    ...
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiohttp import web

from .credentials import SESSION_COOKIE, Credential, credential_from
from .policy import Refusal, SessionPolicy
from .verifier import Session, SessionVerifier

# Where the middleware puts the verified session (None for an anonymous request when optional):
# a typed request key where aiohttp has them (3.13+; a plain string key warns there), else the
# string itself.
SESSION_KEY: Any = (
    web.RequestKey("authgate_session", Session | None)  # type: ignore[arg-type]
    if hasattr(web, "RequestKey")
    else "authgate_session"
)

# aiohttp's handler type has changed between versions; Any keeps the package usable with several.
Handler = Any


def session_of(request: web.Request) -> Session | None:
    """The session :func:`session_middleware` verified for ``request`` (None: anonymous)."""
    session: Session | None = request.get(SESSION_KEY)
    return session


def credential_of(request: web.Request, cookie_name: str = SESSION_COOKIE) -> Credential | None:
    """The session token ``request`` carries: ``Authorization: Bearer`` first, else the
    ``session`` cookie (None: neither). Raises :class:`MalformedAuthorization`."""
    return credential_from(request.headers.get("Authorization"), request.cookies.get(cookie_name))


def session_middleware(
    verifier: SessionVerifier,
    *,
    required_scopes: Iterable[str] = (),
    optional: bool = False,
    origins: Iterable[str] = (),
    cookie_name: str = SESSION_COOKIE,
) -> Any:
    """A middleware that verifies the session of every request it sees.

    The token is ``Authorization: Bearer`` or else the ``cookie_name`` cookie. A request
    without a valid session answers 401 ``{"error": "unauthorized", ...}`` with
    ``WWW-Authenticate: Bearer``; one whose session lacks any of ``required_scopes`` (all are
    required) answers 403 ``insufficient_scope``; a state-changing request (not GET, HEAD,
    OPTIONS) authenticated by the cookie that a browser reports as coming from another site
    answers 403 ``cross_site_request``; when authgate's keys cannot be fetched at all, 503
    ``temporarily_unavailable``. ``optional``: requests without a session (or with a cookie
    that no longer verifies) reach the handler with ``request[SESSION_KEY] = None``.

    ``origins``: the application's public origins (``https://app.example.com``) for the
    cross-site check; without them, the origin the request was made to (its scheme and
    ``Host``), which is only right without a TLS-terminating proxy in front.

    To protect part of an application only, put the middleware on a sub-application
    (``app.add_subapp("/api/", api)``).
    """
    policy = SessionPolicy(
        verifier, frozenset(required_scopes), optional, tuple(origins), cookie_name
    )

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            session = await policy.session_of(
                request.method,
                request.headers,
                request.cookies,
                f"{request.scheme}://{request.host}",
            )
        except Refusal as refusal:
            return _refusal_response(refusal)
        request[SESSION_KEY] = session
        response: web.StreamResponse = await handler(request)
        return response

    return middleware


def _refusal_response(refusal: Refusal) -> web.Response:
    """The JSON answer of a refused request (never cached)."""
    return web.json_response(
        dict(refusal.body),
        status=refusal.status,
        headers={**refusal.headers, "Cache-Control": "no-store"},
    )
