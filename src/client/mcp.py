"""An MCP server (the official MCP Python SDK, ``mcp``) protected by authgate: the SDK's
token verifier protocol (``mcp.server.auth.provider.TokenVerifier``) on
:class:`~authgate.client.AccessTokenVerifier`, and the SDK's ``AuthSettings`` for a
:class:`~authgate.client.ProtectedResource` (docs/integration.md).

The SDK then serves the resource's RFC 9728 metadata itself, at the path RFC 9728 section 3.1
gives, and answers a missing or refused token with 401 and ``resource_metadata`` in the
challenge, a missing scope with 403. ``mcp`` is imported when a function here is called, so
``authgate.client`` works where it is not installed.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

from .access import AccessTokenVerifier, InsufficientScope, InvalidToken
from .introspection import IntrospectionUnavailable
from .keys import KeySetUnavailable
from .resource import ProtectedResource

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken as McpAccessToken
    from mcp.server.auth.settings import AuthSettings

log = logging.getLogger("authgate.client")

# ASGI, spelt out (the package does not depend on an ASGI framework's types).
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Set by unavailable_as_503 for each request it serves: the reason authgate could not be asked,
# once McpTokenVerifier found so.
_unavailable: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "authgate_unavailable", default=None
)


class McpTokenVerifier:
    """``MCPServer(..., token_verifier=McpTokenVerifier(verifier), auth=auth_settings(...))``
    (``FastMCP`` before mcp 2): each bearer token is verified by ``verifier``; a token that
    does not verify, or is not for ``verifier.resource``, is None (the SDK's 401). The
    ``AccessToken`` answered carries the client, the scopes, ``exp``, the resource, ``sub`` as
    ``subject`` and every claim.

    authgate unreachable (its keys, or with introspection its answer) raises
    :class:`~authgate.client.KeySetUnavailable` or
    :class:`~authgate.client.IntrospectionUnavailable` rather than refusing the token: the
    client's token may well be good, and a 401 would send it through authorization again. The
    SDK's application answers that with a 500; wrapped in :func:`unavailable_as_503`, with a
    503 and ``Retry-After``."""

    def __init__(self, verifier: AccessTokenVerifier) -> None:
        self.verifier = verifier

    async def verify_token(self, token: str) -> McpAccessToken | None:
        from mcp.server.auth.provider import AccessToken as McpAccessToken

        try:
            verified = await self.verifier.verify(token)
        except InvalidToken as e:
            log.info("access token refused: %s", e.reason)
            return None
        except InsufficientScope:  # pragma: no cover - no scope is required here
            return None
        except (KeySetUnavailable, IntrospectionUnavailable) as e:
            log.warning("access token not verifiable: %s", e)
            noted = _unavailable.get()
            if noted is not None:
                noted.append(str(e))
            raise
        return McpAccessToken(
            token=verified.token,
            client_id=verified.client_id,
            scopes=sorted(verified.scopes),
            expires_at=int(verified.expires_at.timestamp()),
            resource=verified.resource,
            subject=verified.subject,
            claims=dict(verified.claims),
        )


def auth_settings(
    resource: ProtectedResource, *, required_scopes: Iterable[str] | None = None, **more: Any
) -> AuthSettings:
    """The SDK's ``AuthSettings`` for ``resource``: authgate as the issuer, the resource as
    ``resource_server_url``, ``required_scopes`` (default: ``resource.scopes_supported``) and
    ``validate_token_resource`` (the token must be for this resource; the verifier checks it
    too). ``more``: other ``AuthSettings`` fields (``service_documentation_url``...)."""
    from mcp.server.auth.settings import AuthSettings

    scopes = list(resource.scopes_supported if required_scopes is None else required_scopes)
    # Strings, which the settings read keeping a URL without a path as it is (an AnyHttpUrl
    # made here would gain a "/", and an issuer compares as an exact string).
    settings: dict[str, Any] = {
        "issuer_url": resource.authorization_server,
        "resource_server_url": resource.resource,
        "required_scopes": scopes or None,
    }
    if "validate_token_resource" in AuthSettings.model_fields:  # mcp 1.x has no such field
        settings["validate_token_resource"] = True
    return AuthSettings(**(settings | more))


def unavailable_as_503(app: ASGIApp) -> ASGIApp:
    """The ASGI application ``app`` (the SDK's ``streamable_http_app()``), answering a request
    whose token :class:`McpTokenVerifier` could not verify because authgate was unreachable
    with 503 ``temporarily_unavailable`` and ``Retry-After: 5`` instead of the 500 the SDK's
    Starlette application would send (the token is checked in its authentication middleware,
    outside any exception handler)."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        noted: list[str] = []
        reset = _unavailable.set(noted)
        started = False

        async def forward(message: Message) -> None:
            nonlocal started
            if noted and not started:
                return  # the 500 of the unavailability: answered below instead
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, forward)
        except (KeySetUnavailable, IntrospectionUnavailable):
            if not noted or started:
                raise
            body = json.dumps(
                {
                    "error": "temporarily_unavailable",
                    "error_description": "the access token cannot be verified right now",
                }
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"retry-after", b"5"),
                        (b"cache-control", b"no-store"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
        finally:
            _unavailable.reset(reset)

    return guarded


__all__ = ["McpTokenVerifier", "auth_settings", "unavailable_as_503"]
