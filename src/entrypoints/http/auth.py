"""The service's own session JWT as the bearer token of the REST layer."""

from __future__ import annotations

from authgate.entrypoints.rest import InvalidCredential, Principal
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
