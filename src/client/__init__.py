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

An API or an MCP server protected as an OAuth resource server of authgate
(docs/integration.md, "Protecting an API or an MCP server"):

* :class:`ProtectedResource`: the resource's identifier, authgate as its authorization server,
  its scopes: its RFC 9728 metadata;
* :class:`AccessTokenVerifier`: ``await verifier.verify(token, scopes)`` → :class:`AccessToken`,
  or :class:`InvalidToken` / :class:`InsufficientScope`;
* :func:`authgate.client.aiohttp.access_token_middleware` and
  :func:`~authgate.client.aiohttp.add_protected_resource_routes`;
  :func:`authgate.client.fastapi.require_access_token` and
  :func:`~authgate.client.fastapi.protected_resource_routes`;
  :class:`authgate.client.mcp.McpTokenVerifier` and :func:`~authgate.client.mcp.auth_settings`
  for the MCP Python SDK (imported only there).
"""

from .access import AccessToken, AccessTokenVerifier, InsufficientScope, InvalidToken
from .bearer import BearerRefusal
from .credentials import SESSION_COOKIE, Credential, MalformedAuthorization, credential_from
from .introspection import Introspection, IntrospectionUnavailable
from .keys import KeySetUnavailable
from .resource import ProtectedResource
from .verifier import InvalidSession, Session, SessionVerifier

__all__ = [
    "SESSION_COOKIE",
    "AccessToken",
    "AccessTokenVerifier",
    "BearerRefusal",
    "Credential",
    "InsufficientScope",
    "Introspection",
    "IntrospectionUnavailable",
    "InvalidSession",
    "InvalidToken",
    "KeySetUnavailable",
    "MalformedAuthorization",
    "ProtectedResource",
    "Session",
    "SessionVerifier",
    "credential_from",
]
