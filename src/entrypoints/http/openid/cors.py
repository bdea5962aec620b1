"""CORS on the OpenID Provider's endpoints that public clients' pages call (token, userinfo,
revocation): only for public clients' registered origins, never ``*``, never with credentials
(these endpoints read no cookie).

The preflight knows no client yet: it answers for every public client's origin. An answer does
too until the operation knows its client (:func:`admit_client`), then only for that client's
origins: an error before that (a failed authentication) stays readable to the application."""

from __future__ import annotations

import attrs
from aiohttp import web

from authgate.domain.openid.clients import Client, ClientRegistry
from authgate.entrypoints.rest import Cors, normalise_origin

_CLIENT_ORIGINS = web.RequestKey("authgate_oauth_client_origins", frozenset)


@attrs.frozen
class PublicClientCors(Cors):
    """:class:`~authgate.entrypoints.rest.Cors` for every public client's origins, narrowed
    per request by :func:`admit_client`."""

    def response_headers(self, request: web.BaseRequest) -> dict[str, str]:
        narrowed: frozenset[str] | None = request.get(_CLIENT_ORIGINS)
        if narrowed is not None:
            sent = request.headers.get("Origin")
            try:
                if sent is None or normalise_origin(sent) not in narrowed:
                    return {}
            except ValueError:
                return {}
        return super().response_headers(request)


def public_client_cors(clients: ClientRegistry) -> PublicClientCors:
    """The CORS policy of the provider's browser-facing endpoints for ``clients``."""
    origins = frozenset(o for c in clients if c.is_public for o in c.allowed_origins)
    return PublicClientCors(
        origins,
        allow_headers=("Authorization", "Content-Type"),
        expose_headers=("WWW-Authenticate",),
        credentials=False,
    )


def admit_client(request: web.Request, client: Client) -> None:
    """From now on, only ``client``'s own origins may read the answer (none but a public
    client's)."""
    request[_CLIENT_ORIGINS] = client.allowed_origins if client.is_public else frozenset()
