"""An API or an MCP server as an OAuth resource server of authgate: its description, RFC 9728
protected resource metadata, which tells a client (an MCP client, say) which authorization
server issues tokens for it and which scopes it knows."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

WELL_KNOWN = "/.well-known/oauth-protected-resource"


@dataclasses.dataclass(frozen=True, init=False)
class ProtectedResource:
    """A protected resource: ``resource``, its identifier (an https URL without a query or a
    fragment, RFC 9728 section 1.2; http only on loopback for development), is the ``aud``
    authgate's access tokens for it carry; ``authorization_server``: authgate's issuer
    (``rest.public_url``); ``scopes_supported``, ``resource_name`` and
    ``resource_documentation`` are published as they are."""

    resource: str
    authorization_server: str
    scopes_supported: tuple[str, ...]
    resource_name: str | None
    resource_documentation: str | None
    bearer_methods_supported: tuple[str, ...]

    def __init__(
        self,
        resource: str,
        authorization_server: str,
        *,
        scopes_supported: Iterable[str] = (),
        resource_name: str | None = None,
        resource_documentation: str | None = None,
    ) -> None:
        _check_url("resource", resource)
        _check_url("authorization_server", authorization_server)
        scopes = tuple(scopes_supported)
        if any(not s or " " in s for s in scopes):
            raise ValueError("scopes_supported: each scope is one non-empty word")
        set_ = object.__setattr__
        set_(self, "resource", resource)
        set_(self, "authorization_server", authorization_server.rstrip("/"))
        set_(self, "scopes_supported", scopes)
        set_(self, "resource_name", resource_name)
        set_(self, "resource_documentation", resource_documentation)
        # RFC 6750 section 2.1 only: a token in a form body or the query is not accepted.
        set_(self, "bearer_methods_supported", ("header",))

    @property
    def metadata_path(self) -> str:
        """Where the metadata is served (RFC 9728 section 3.1): the well-known path, followed
        by the resource identifier's path when it has one (``/.well-known/oauth-protected-
        resource/mcp`` for ``https://api.example.com/mcp``)."""
        path = urlsplit(self.resource).path.rstrip("/")
        return WELL_KNOWN + path

    @property
    def metadata_paths(self) -> tuple[str, ...]:
        """The paths the metadata is served at: :attr:`metadata_path` and, when the
        identifier has a path, also the bare well-known path (which clients that do not insert
        the resource's path ask)."""
        return tuple(dict.fromkeys((self.metadata_path, WELL_KNOWN)))

    @property
    def metadata_url(self) -> str:
        """The metadata's URL (``resource_metadata`` in a ``WWW-Authenticate`` challenge)."""
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{self.metadata_path}"

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 metadata document (section 2)."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": [self.authorization_server],
            "bearer_methods_supported": list(self.bearer_methods_supported),
        }
        if self.scopes_supported:
            document["scopes_supported"] = list(self.scopes_supported)
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        if self.resource_documentation is not None:
            document["resource_documentation"] = self.resource_documentation
        return document


METADATA_HEADERS = {
    # Public, the same for everyone: a browser-based client may read it from its own origin.
    "Access-Control-Allow-Origin": "*",
    "Cache-Control": "public, max-age=3600",
}


def _check_url(name: str, url: str) -> None:
    parts = urlsplit(url)
    loopback = parts.hostname in ("127.0.0.1", "::1", "localhost")
    if not (parts.scheme == "https" or (parts.scheme == "http" and loopback)) or not parts.netloc:
        raise ValueError(f"{name}: an https URL (http only on loopback), not {url!r}")
    if parts.query or parts.fragment or "#" in url:
        raise ValueError(f"{name}: a URL without query or fragment, not {url!r}")


__all__ = ["WELL_KNOWN", "ProtectedResource"]
