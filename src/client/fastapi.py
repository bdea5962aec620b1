"""FastAPI and Starlette: a dependency that verifies authgate's session; for an API protected
as an OAuth resource server, a dependency that verifies authgate's access tokens and the routes
serving its protected resource metadata, which a bare Starlette application can use too
(examples: docs/integration.md).

FastAPI and Starlette are imported when a function here is called, so ``authgate.client``
works where they are not installed.
"""

# No ``from __future__ import annotations``: FastAPI reads the dependency's parameter
# annotations at run time, and the ``Request`` class exists only inside require_session.

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from .access import AccessToken, AccessTokenVerifier
from .bearer import BearerRefusal, authorize
from .credentials import SESSION_COOKIE
from .policy import Refusal, SessionPolicy
from .resource import METADATA_HEADERS, ProtectedResource
from .verifier import Session, SessionVerifier


def require_session(
    verifier: SessionVerifier,
    *,
    scopes: Iterable[str] = (),
    optional: bool = False,
    origins: Iterable[str] = (),
    cookie_name: str = SESSION_COOKIE,
) -> Callable[..., Awaitable[Session | None]]:
    """A dependency (use it with ``Depends``) answering the request's :class:`Session`.

    The same rules as :func:`authgate.client.aiohttp.session_middleware`: the bearer token or
    else the cookie; all of ``scopes`` are required; refusals raise ``HTTPException`` with
    status 401 (``WWW-Authenticate: Bearer``), 403 or 503 and, as ``detail``, authgate's error
    object ``{"error": ..., "message": ...}``. ``optional``: None for an anonymous request."""
    from fastapi import HTTPException, Request

    policy = SessionPolicy(verifier, frozenset(scopes), optional, tuple(origins), cookie_name)

    async def dependency(request: Request) -> Any:
        try:
            return await policy.session_of(
                request.method,
                request.headers,
                request.cookies,
                f"{request.url.scheme}://{request.url.netloc}",
            )
        except Refusal as refusal:
            raise HTTPException(
                refusal.status, detail=refusal.body, headers=refusal.headers
            ) from None

    return dependency


def require_access_token(
    verifier: AccessTokenVerifier, *, scopes: Iterable[str] = ()
) -> Callable[..., Awaitable[AccessToken]]:
    """A dependency (use it with ``Depends``) answering the request's verified
    :class:`~authgate.client.AccessToken`: one authgate issued for ``verifier.resource``,
    carrying every one of ``scopes``. Refusals raise ``HTTPException`` with status 401, 403 or
    503, the RFC 6750 challenge with ``resource_metadata`` in ``WWW-Authenticate`` and, as
    ``detail``, ``{"error": ..., "error_description": ...}`` (docs/integration.md)."""
    from fastapi import HTTPException, Request

    required = frozenset(scopes)

    async def dependency(request: Request) -> Any:
        try:
            return await authorize(verifier, request.headers.get("Authorization"), required)
        except BearerRefusal as refusal:
            raise HTTPException(
                refusal.status, detail=refusal.body, headers=refusal.headers
            ) from None

    return dependency


def protected_resource_endpoint(resource: ProtectedResource) -> Callable[..., Awaitable[Any]]:
    """A Starlette endpoint (``async (request) -> JSONResponse``) answering ``resource``'s
    RFC 9728 metadata."""
    from starlette.responses import JSONResponse

    document = resource.metadata()

    async def metadata(request: Any) -> Any:
        return JSONResponse(document, headers=METADATA_HEADERS)

    return metadata


def protected_resource_routes(resource: ProtectedResource) -> list[Any]:
    """Starlette routes serving ``resource``'s metadata at its paths
    (``ProtectedResource.metadata_paths``), for ``Starlette(routes=[...])`` or
    ``app.router.routes.extend(...)`` on a FastAPI application."""
    from starlette.routing import Route

    endpoint = protected_resource_endpoint(resource)
    return [
        Route(path, endpoint, methods=["GET"], include_in_schema=False)
        for path in resource.metadata_paths
    ]
