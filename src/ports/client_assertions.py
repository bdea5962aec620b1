"""The signature of a client's assertion (``private_key_jwt``, RFC 7523), checked with the keys
the client registered: inline (``jwks``) or published at its ``jwks_uri``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from authgate.domain.clients import Client


class AssertionRejected(Exception):
    """The assertion is not a JWS signed by a key of the client; the text is safe to log."""


class ClientKeysUnavailable(Exception):
    """The client's key set cannot be fetched right now; the text is safe to log."""


class ClientAssertionSignatures(Protocol):
    async def verified_claims(self, client: Client, assertion: str) -> Mapping[str, Any]:
        """The claims of ``assertion`` once its signature verifies with a key of ``client``
        and one of :data:`~authgate.domain.clients.ASSERTION_ALGORITHMS`. The claims
        themselves are not checked here. Raises :class:`AssertionRejected` or
        :class:`ClientKeysUnavailable`."""
        ...
