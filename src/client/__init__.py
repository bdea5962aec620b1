"""``authgate.client``: trusting authgate's session in the application's own Python back end.

Verifies the session token (the bearer token or the ``session`` cookie) against authgate's
published keys (``/.well-known/jwks.json``, cached), and answers the account id and scopes.
Depends on aiohttp and joserfc only; nothing else of authgate is imported, so the package can
be used by any service. See docs/integration.md.

* :class:`SessionVerifier`: ``await verifier.verify(token)`` → :class:`Session`, or
  :class:`InvalidSession`;
* :func:`authgate.client.aiohttp.session_middleware`: an aiohttp middleware;
* :func:`authgate.client.fastapi.require_session`: a FastAPI dependency (FastAPI is imported
  only there).
"""

from .credentials import SESSION_COOKIE, Credential, MalformedAuthorization, credential_from
from .keys import KeySetUnavailable
from .verifier import InvalidSession, Session, SessionVerifier

__all__ = [
    "SESSION_COOKIE",
    "Credential",
    "InvalidSession",
    "KeySetUnavailable",
    "MalformedAuthorization",
    "Session",
    "SessionVerifier",
    "credential_from",
]
