"""aiohttp: a middleware that verifies authgate's session on every request of an application,
and, for an API protected as an OAuth resource server, a middleware that verifies authgate's
access tokens and the route serving its protected resource metadata (examples:
docs/integration.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiohttp import web

from .access import AccessToken, AccessTokenVerifier
from .bearer import BearerRefusal, authorize
from .credentials import SESSION_COOKIE
from .policy import Refusal, SessionPolicy
from .resource import METADATA_HEADERS, ProtectedResource
from .verifier import Session, SessionVerifier

# Where the middleware puts the verified session (None for an anonymous request when optional):
# a typed request key where aiohttp has them (3.13+; a plain string key warns there), else the
# string itself.
SESSION_KEY: Any = (
    web.RequestKey("authgate_session", Session | None)  # type: ignore[arg-type]
    if hasattr(web, "RequestKey")
    else "authgate_session"
)

# Where the access token middleware puts the verified token.
ACCESS_TOKEN_KEY: Any = (
    web.RequestKey("authgate_access_token", AccessToken)
    if hasattr(web, "RequestKey")
    else "authgate_access_token"
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


def access_token_of(request: web.Request) -> AccessToken:
    """The access token :func:`access_token_middleware` verified for ``request``."""
    token: AccessToken = request[ACCESS_TOKEN_KEY]
    return token


def access_token_middleware(
    verifier: AccessTokenVerifier, *, required_scopes: Iterable[str] = ()
) -> Any:
    """A middleware that lets a request through only with an access token authgate issued for
    ``verifier.resource`` carrying every one of ``required_scopes`` (``request[ACCESS_TOKEN_KEY]``,
    or :func:`access_token_of`), and otherwise answers as RFC 6750 and the MCP authorization
    specification ask (401, 403 or 503, with ``resource_metadata`` in the challenge:
    docs/integration.md). The resource's metadata paths are let through, so the middleware can
    sit on the application that serves them too (:func:`add_protected_resource_routes`)."""
    scopes = frozenset(required_scopes)
    public = frozenset(verifier.resource.metadata_paths)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path not in public:
            try:
                request[ACCESS_TOKEN_KEY] = await authorize(
                    verifier, request.headers.get("Authorization"), scopes
                )
            except BearerRefusal as refusal:
                return web.json_response(
                    refusal.body, status=refusal.status, headers=refusal.headers
                )
        response: web.StreamResponse = await handler(request)
        return response

    return middleware


def add_protected_resource_routes(app: web.Application, resource: ProtectedResource) -> None:
    """Serve ``resource``'s RFC 9728 metadata on ``app`` (the root application: the paths
    are ``/.well-known/oauth-protected-resource`` and, for an identifier with a path, that
    path after it)."""
    document = resource.metadata()

    async def metadata(request: web.Request) -> web.Response:
        return web.json_response(document, headers=METADATA_HEADERS)

    for path in resource.metadata_paths:
        app.router.add_get(path, metadata)
