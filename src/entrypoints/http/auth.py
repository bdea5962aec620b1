"""Session authentication: the service's own session JWT as the bearer token of the REST
layer, and the same-origin guard of changes authenticated by the session cookie."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from aiohttp import web

from authgate.entrypoints.rest import HttpError, InvalidCredential, Principal
from authgate.ports.clock import Clock
from authgate.ports.sessions import InvalidSession, SessionClaims, SessionTokens

SESSION_COOKIE = "session"


class SessionVerifier:
    """A :class:`~authgate.entrypoints.rest.TokenVerifier` over :class:`SessionTokens`."""

    def __init__(self, sessions: SessionTokens, clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock

    def claims(self, token: str) -> SessionClaims:
        """The session's claims; raises :class:`InvalidSession`."""
        return self._sessions.verify(token, self._clock.now())

    async def verify(self, token: str) -> Principal:
        try:
            claims = self.claims(token)
        except InvalidSession as e:
            raise InvalidCredential(str(e)) from None
        return Principal(subject=claims.account_id, scheme="bearer", claims=claims.claims)


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL or an ``Origin`` value, lower case, without the
    scheme's default port (browsers never send it; a configured URL may)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    netloc = parts.netloc.lower().rpartition("@")[2]
    default = {"http": ":80", "https": ":443"}.get(scheme)
    if default and netloc.endswith(default):
        netloc = netloc.removesuffix(default)
    return f"{scheme}://{netloc}"


class SameOriginGuard:
    """Refuses a cookie-authenticated, state-changing request that a browser reports as coming
    from another site.

    ``Sec-Fetch-Site``, when sent, must be ``same-origin``; ``Origin``, when sent, must be
    exactly (scheme, host and port) one of the service's own public origins or a trusted
    origin (the application's); at least one of the two must be present. The service's own
    origins are those configured (``rest.public_url``); when none is configured, the origin
    the request itself was made to (its scheme and ``Host``), which only holds without a
    TLS-terminating proxy in front — behind one, configure the public URL.
    """

    def __init__(
        self, own_origins: Iterable[str] = (), trusted_origins: Iterable[str] = ()
    ) -> None:
        self._own = frozenset(_origin(o) for o in own_origins if o)
        self._trusted = frozenset(_origin(o) for o in trusted_origins if o)

    def _is_own(self, origin: str, request: web.Request) -> bool:
        if self._own:
            return origin in self._own
        return origin == _origin(f"{request.scheme}://{request.host}")

    def allows(self, request: web.Request) -> bool:
        fetch_site = request.headers.get("Sec-Fetch-Site")
        origin = request.headers.get("Origin")
        if fetch_site is None and origin is None:
            return False
        if fetch_site is not None and fetch_site.lower() != "same-origin":
            return False
        if origin is not None:
            if origin.strip() == "null":
                return False
            normalised = _origin(origin)
            if not self._is_own(normalised, request) and normalised not in self._trusted:
                return False
        return True

    def check(self, request: web.Request) -> None:
        """Raise 403 ``cross_site_request`` unless :meth:`allows`."""
        if not self.allows(request):
            raise HttpError(
                403,
                {
                    "error": "cross_site_request",
                    "message": "a request authenticated by the session cookie must come from "
                    "this site's own pages (Origin / Sec-Fetch-Site); other clients use the "
                    "bearer token",
                },
            )
