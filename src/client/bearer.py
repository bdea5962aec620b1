"""The one decision the resource server adapters (aiohttp, FastAPI) make: which access token
a request carries, or which answer refuses it. The answers are RFC 6750's, with RFC 9728's
``resource_metadata`` in every challenge, as the MCP authorization specification asks: a
client that is refused learns where to find the authorization server."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .access import AccessToken, AccessTokenVerifier, InsufficientScope, InvalidToken
from .introspection import IntrospectionUnavailable
from .keys import KeySetUnavailable

log = logging.getLogger("authgate.client")


class BearerRefusal(Exception):
    """The answer that refuses a request: ``status``, a JSON ``body`` (``error``,
    ``error_description``) and ``headers`` (the ``WWW-Authenticate`` challenge; never
    cached)."""

    def __init__(
        self,
        status: int,
        error: str,
        description: str,
        challenge: str | None,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status, error)
        self.status = status
        self.body = {"error": error, "error_description": description}
        self.headers = {"Cache-Control": "no-store", **(extra_headers or {})}
        if challenge is not None:
            self.headers["WWW-Authenticate"] = challenge


def _quoted(value: str) -> str:
    """An RFC 9110 quoted-string of ``value`` (our own texts: no control characters)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(verifier: AccessTokenVerifier, **params: str) -> str:
    """``Bearer <params>, resource_metadata="<the metadata URL>"``."""
    params["resource_metadata"] = verifier.resource.metadata_url
    return "Bearer " + ", ".join(f"{k}={_quoted(v)}" for k, v in params.items())


def bearer_token(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>``; None without one (no header, or another
    scheme). Raises :class:`BearerRefusal` (400 ``invalid_request``) for a ``Bearer`` header
    without exactly one token."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    if not token or " " in token:
        raise BearerRefusal(
            400,
            "invalid_request",
            "malformed Authorization header",
            'Bearer error="invalid_request"',
        )
    return token


async def authorize(
    verifier: AccessTokenVerifier, authorization: str | None, required_scopes: Iterable[str]
) -> AccessToken:
    """The verified access token of a request whose ``Authorization`` header is
    ``authorization``, carrying every one of ``required_scopes``; raises
    :class:`BearerRefusal`:

    * no token: 401, ``Bearer resource_metadata="…"``;
    * a token that does not verify (forged, expired, for another resource or issuer, revoked
      with introspection): 401, ``Bearer error="invalid_token", error_description="…",
      resource_metadata="…"``;
    * a scope missing: 403, ``Bearer error="insufficient_scope", scope="<every required
      scope>", resource_metadata="…"``;
    * authgate unreachable (its keys, or with introspection its answer): 503, ``Retry-After``.
    """
    try:
        token = bearer_token(authorization)
    except BearerRefusal as refusal:
        refusal.headers["WWW-Authenticate"] = challenge(verifier, error="invalid_request")
        raise
    if token is None:
        raise BearerRefusal(401, "unauthorized", "an access token is required", challenge(verifier))
    try:
        return await verifier.verify(token, required_scopes)
    except InvalidToken as e:
        log.info("access token refused: %s", e.reason)
        raise BearerRefusal(
            401,
            "invalid_token",
            e.description,
            challenge(verifier, error="invalid_token", error_description=e.description),
        ) from None
    except InsufficientScope as e:
        scope = " ".join(sorted(e.required))
        description = f"the access token lacks a required scope ({scope})"
        raise BearerRefusal(
            403,
            "insufficient_scope",
            description,
            challenge(
                verifier,
                error="insufficient_scope",
                error_description=description,
                scope=scope,
            ),
        ) from None
    except (KeySetUnavailable, IntrospectionUnavailable) as e:
        log.warning("access token not verifiable: %s", e)
        raise BearerRefusal(
            503,
            "temporarily_unavailable",
            "the access token cannot be verified right now",
            None,
            {"Retry-After": "5"},
        ) from None


__all__ = ["BearerRefusal", "authorize", "bearer_token", "challenge"]
