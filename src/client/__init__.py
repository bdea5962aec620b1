"""``authgate.client``: trusting authgate's session in the application's own Python back end
(docs/integration.md). Depends on aiohttp and joserfc only; nothing else of authgate is
imported, so the package can be used by any service.

* :class:`SessionVerifier`: ``await verifier.verify(token)`` → :class:`Session`, or
  :class:`InvalidSession`;
* :class:`Introspection`: optionally, also ask authgate whether each verified session is still
  live (a short cache), for back ends that need a revocation to count at once;
* :func:`authgate.client.aiohttp.session_middleware`: an aiohttp middleware;
* :func:`authgate.client.fastapi.require_session`: a FastAPI dependency (FastAPI is imported
  only there).
"""

from .credentials import SESSION_COOKIE, Credential, MalformedAuthorization, credential_from
from .introspection import Introspection, IntrospectionUnavailable
from .keys import KeySetUnavailable
from .verifier import InvalidSession, Session, SessionVerifier

__all__ = [
    "SESSION_COOKIE",
    "Credential",
    "Introspection",
    "IntrospectionUnavailable",
    "InvalidSession",
    "KeySetUnavailable",
    "MalformedAuthorization",
    "Session",
    "SessionVerifier",
    "credential_from",
]
