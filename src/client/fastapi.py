"""A FastAPI dependency that verifies authgate's session (an example: docs/integration.md).

FastAPI is imported when :func:`require_session` is called, so ``authgate.client`` works where
FastAPI is not installed.
"""

# No ``from __future__ import annotations``: FastAPI reads the dependency's parameter
# annotations at run time, and the ``Request`` class exists only inside require_session.

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from .credentials import SESSION_COOKIE
from .policy import Refusal, SessionPolicy
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
