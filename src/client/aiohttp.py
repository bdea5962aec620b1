"""An aiohttp middleware that verifies authgate's session on every request of an application
(an example: docs/integration.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiohttp import web

from .credentials import SESSION_COOKIE
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


def session_middleware(
    verifier: SessionVerifier,
    *,
    required_scopes: Iterable[str] = (),
    optional: bool = False,
    origins: Iterable[str] = (),
    cookie_name: str = SESSION_COOKIE,
) -> Any:
    """A middleware that verifies the session of every request it sees and answers a refused
    one as authgate does (401, 403 or 503: docs/integration.md, "The answers").

    The token is ``Authorization: Bearer`` or else the ``cookie_name`` cookie; all of
    ``required_scopes`` are required. ``optional``: requests without a session (or with a
    cookie that no longer verifies) reach the handler with ``request[SESSION_KEY] = None``.
    ``origins``: the application's public origins for the cross-site check of cookie-borne
    changes; without them, the origin the request was made to (its scheme and ``Host``), which
    is only right without a TLS-terminating proxy in front. To protect part of an application
    only, put the middleware on a sub-application (``app.add_subapp("/api/", api)``).
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
            return web.json_response(refusal.body, status=refusal.status, headers=refusal.headers)
        request[SESSION_KEY] = session
        response: web.StreamResponse = await handler(request)
        return response

    return middleware
