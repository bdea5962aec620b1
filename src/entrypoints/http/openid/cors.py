"""CORS on the OpenID Provider's endpoints that browser applications call: the token,
userinfo and revocation endpoints.

A public client (a single-page application) calls them from its pages, so they answer CORS,
but only for the origins public clients registered (``Client.allowed_origins``: by default
the origins of their http(s) redirect URIs), never ``*``, and never with credentials: these
endpoints read no cookie, the page authenticates by what it sends (a code and its verifier, a
refresh token, a bearer access token), so a browser's cookies are neither wanted nor allowed
(``Access-Control-Allow-Credentials`` is never sent).

* The preflight (``OPTIONS``) knows no client yet: it answers for the origins of all public
  clients together.
* An actual answer carries ``Access-Control-Allow-Origin`` for any public client's origin
  until the operation knows its client; from then on (:func:`admit_client`), only for an
  origin that client registered, and for none when it is not a public client. An error
  answered before the client is known (a client that failed to authenticate) stays readable
  to a registered origin, so the application can show it.

Usage (the token endpoint does the same)::

    cors = public_client_cors(clients)
    api.operation("POST", TOKEN_PATH, ..., cors=cors)(handler)
    # in the handler, once the client is known:
    admit_client(call.request, client)
"""

from __future__ import annotations

import attrs
from aiohttp import web

from authgate.domain.openid.clients import Client, ClientRegistry
from authgate.entrypoints.rest import Cors, normalise_origin

_CLIENT_ORIGINS = web.RequestKey("authgate_oauth_client_origins", frozenset)


@attrs.frozen
class PublicClientCors(Cors):
    """:class:`~authgate.entrypoints.rest.Cors` without credentials, for the origins of every
    public client, narrowed per request to the origins of the client the request turned out
    to be (:func:`admit_client`)."""

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
    """From now on, ``request``'s answer is readable only by pages of ``client``'s own
    registered origins (none unless it is a public client)."""
    request[_CLIENT_ORIGINS] = client.allowed_origins if client.is_public else frozenset()
