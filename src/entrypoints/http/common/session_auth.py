"""Session authentication: the session JWT as the bearer token and as the HttpOnly ``session``
cookie (the ``sessionCookie`` scheme, for pages that cannot read it; the bearer token wins when
both are sent), and :class:`SameOriginGuard`: a browser attaches cookies to requests other sites
cause, so a change authenticated by the cookie must prove it comes from the service's pages."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from aiohttp import web

from authgate.domain.redirects import origin
from authgate.entrypoints.rest import ApiKey, HttpError, InvalidCredential, Principal
from authgate.ports.session_tokens import InvalidSession, SessionClaims
from authgate.services.sessions import SessionService

SESSION_COOKIE = "session"
SESSION_COOKIE_SCHEME = "sessionCookie"
PRINCIPAL_CACHE_SIZE = 4096


class SessionVerifier:
    """The bearer :class:`~authgate.entrypoints.rest.TokenVerifier` and the cookie's
    :class:`~authgate.entrypoints.rest.ApiKeyChecker`: a token must verify and its session be
    live."""

    def __init__(self, sessions: SessionService) -> None:
        self._sessions = sessions
        # Per (claims, scheme): the token cache answers the same claims object for a token, so
        # a principal is built once per token. An entry holds its claims: ids are not reused.
        self._principals: dict[tuple[int, str], tuple[SessionClaims, Principal]] = {}

    async def principal(self, token: str, scheme: str) -> Principal:
        """The caller a token names; raises :class:`InvalidCredential`."""
        try:
            claims = await self._sessions.verify(token)
        except InvalidSession as e:
            raise InvalidCredential(str(e)) from None
        return self._principal_of(claims, scheme)

    def _principal_of(self, claims: SessionClaims, scheme: str) -> Principal:
        key = (id(claims), scheme)
        known = self._principals.get(key)
        if known is not None and known[0] is claims:
            return known[1]
        principal = Principal(subject=claims.account_id, scheme=scheme, claims=claims.claims)
        if len(self._principals) >= PRINCIPAL_CACHE_SIZE:
            self._principals.clear()
        self._principals[key] = (claims, principal)
        return principal

    async def verify(self, token: str) -> Principal:
        """The bearer scheme's verifier: :meth:`principal` written out, one coroutine fewer
        on every bearer request."""
        try:
            claims = await self._sessions.verify(token)
        except InvalidSession as e:
            raise InvalidCredential(str(e)) from None
        return self._principal_of(claims, "bearer")

    async def check(self, key: str) -> Principal:
        """The :class:`~authgate.entrypoints.rest.ApiKeyChecker` of the cookie scheme."""
        return await self.principal(key, SESSION_COOKIE_SCHEME)


def session_id_of(principal: Principal) -> str:
    """The id of the session a principal's token belongs to (``sid``; ``jti`` before ids)."""
    sid = principal.claims.get("sid", principal.claims.get("jti"))
    return sid if isinstance(sid, str) else ""


def auth_time_of(principal: Principal) -> dt.datetime | None:
    """When the principal last authenticated at the provider (``auth_time``, else ``iat``)."""
    value = principal.claims.get("auth_time", principal.claims.get("iat"))
    if isinstance(value, int) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value, dt.UTC)
    return None


def session_cookie_scheme(verifier: SessionVerifier) -> ApiKey:
    """The ``sessionCookie`` security scheme: the ``session`` cookie as the credential."""
    return ApiKey(SESSION_COOKIE_SCHEME, SESSION_COOKIE, verifier, True)


class SameOriginGuard:
    """Refuses a cookie-authenticated change that a browser reports as coming from another
    site: ``Origin`` must be one of the service's own (``rest.public_url``; without one, the
    request's own scheme and ``Host``: wrong behind a TLS-terminating proxy) with
    ``Sec-Fetch-Site`` ``same-origin`` when sent, or a trusted one (``app.allowed_origins``);
    without ``Origin`` (a navigation), ``Sec-Fetch-Site: same-origin`` or a trusted
    ``Referer``."""

    def __init__(
        self, own_origins: Iterable[str] = (), trusted_origins: Iterable[str] = ()
    ) -> None:
        self._own = frozenset(origin(o) for o in own_origins if o)
        self._trusted = frozenset(origin(o) for o in trusted_origins if o)

    def _is_own(self, sent: str, request: web.Request) -> bool:
        if self._own:
            return sent in self._own
        return sent == origin(f"{request.scheme}://{request.host}")

    def allows(self, request: web.Request) -> bool:
        fetch_site = request.headers.get("Sec-Fetch-Site")
        same_origin = fetch_site is None or fetch_site.lower() == "same-origin"
        sent = request.headers.get("Origin")
        if sent is None:
            if fetch_site is not None and same_origin:
                return True
            # A navigation carries no Origin; its Referer (no page can forge it) names the app.
            referer = request.headers.get("Referer")
            return referer is not None and self._trusted_referer(referer)
        if sent.strip() == "null":
            return False
        normalised = origin(sent)
        if self._is_own(normalised, request):
            return same_origin
        return normalised in self._trusted

    def _trusted_referer(self, referer: str) -> bool:
        return referer.strip().lower().startswith(("http://", "https://")) and (
            origin(referer) in self._trusted
        )

    def check(self, request: web.Request) -> None:
        """Raise 403 ``cross_site_request`` unless :meth:`allows`."""
        if not self.allows(request):
            raise cross_site_refusal()


def cross_site_refusal() -> HttpError:
    """The guard's 403 (also the OpenAPI document's example of it)."""
    return HttpError(
        403,
        {
            "error": "cross_site_request",
            "message": "a request authenticated by the session cookie must come from "
            "this site's own pages (Origin / Sec-Fetch-Site); other clients use the "
            "bearer token",
        },
    )
