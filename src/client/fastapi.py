"""A FastAPI dependency that verifies authgate's session.

FastAPI is imported when :func:`require_session` is called, so ``authgate.client`` works where
FastAPI is not installed.

    verifier = SessionVerifier.for_service("https://auth.example.com",
                                           issuer="authgate", audience="authgate")
    current_session = require_session(verifier, scopes={"account:read"})

    @app.get("/me")
    async def me(session: Session = Depends(current_session)) -> dict[str, str]:
        return {"account": session.account_id}
"""

# No ``from __future__ import annotations``: FastAPI reads the dependency's parameter
# annotations at run time, and the ``Request`` class exists only inside require_session.

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from .credentials import SESSION_COOKIE
from .policy import Refusal, authenticate
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

    required = frozenset(scopes)
    own = tuple(origins)

    async def dependency(request: Request) -> Any:
        try:
            return await authenticate(
                verifier,
                method=request.method,
                authorization=request.headers.get("Authorization"),
                session_cookie=request.cookies.get(cookie_name),
                origin=request.headers.get("Origin"),
                fetch_site=request.headers.get("Sec-Fetch-Site"),
                own_origins=own or (f"{request.url.scheme}://{request.url.netloc}",),
                required_scopes=required,
                optional=optional,
            )
        except Refusal as refusal:
            raise HTTPException(
                refusal.status,
                detail=dict(refusal.body),
                headers={**refusal.headers, "Cache-Control": "no-store"},
            ) from None

    return dependency
