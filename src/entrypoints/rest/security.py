"""Security schemes: bearer JWT and API key, each with a pluggable checker (a port) that turns
the credential into the :class:`Principal` the operation receives; a failure answers 401.

Every scheme may require scopes (``scheme.with_scopes("a", "b")``): a verified credential whose
principal carries none of them answers 403 (``insufficient_scope``), whatever the scheme, so a
session cookie declared as an :class:`ApiKey` is held to the same rule as a bearer token. With
``security_optional=True`` a request without any credential runs anonymously, but one that is
present and does not verify (or lacks the scopes) is refused all the same.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Protocol

import attrs
from aiohttp import web

from .errors import HttpError


@attrs.frozen
class Principal:
    """The verified caller: its subject, the scheme that verified it and the token's claims."""

    subject: str
    scheme: str
    claims: Mapping[str, Any] = attrs.field(factory=dict)

    @functools.cached_property  # a verifier may hand out the same principal on every request
    def scopes(self) -> frozenset[str]:
        scope = self.claims.get("scope", "")
        if isinstance(scope, str):
            return frozenset(scope.split())
        if isinstance(scope, list | tuple):
            return frozenset(str(s) for s in scope)
        return frozenset()


class InvalidCredential(Exception):
    """Raised by a checker for a credential that does not verify (its text is logged, not sent)."""


class TokenVerifier(Protocol):
    """Verifies a bearer token (a JWT) and names its subject."""

    async def verify(self, token: str) -> Principal:
        """Return the principal, or raise :class:`InvalidCredential`."""


class ApiKeyChecker(Protocol):
    """Checks an API key."""

    async def check(self, key: str) -> Principal:
        """Return the principal, or raise :class:`InvalidCredential`."""


def unauthorized(message: str, challenge: str | None = "Bearer") -> HttpError:
    """A 401 ``unauthorized`` with ``message``, and the challenge when the scheme has one."""
    headers = {"WWW-Authenticate": challenge} if challenge else None
    return HttpError(401, {"error": "unauthorized", "message": message}, headers)


def insufficient_scope(any_of: frozenset[str], challenge: str | None = None) -> HttpError:
    """The 403 of a credential whose principal carries none of ``any_of``."""
    message = "the token lacks the required scope: one of " + ", ".join(sorted(any_of))
    headers = {"WWW-Authenticate": challenge} if challenge else None
    return HttpError(403, {"error": "insufficient_scope", "message": message}, headers)


def _require_scopes(
    principal: Principal, any_of: frozenset[str], challenge: str | None
) -> Principal:
    if any_of and not (principal.scopes & any_of):
        raise insufficient_scope(any_of, challenge)
    return principal


@attrs.frozen
class BearerJWT:
    """``Authorization: Bearer <JWT>``, verified by ``verifier``; ``scopes``: see the module."""

    name: str
    verifier: TokenVerifier = attrs.field(eq=False)
    scopes: frozenset[str] = frozenset()

    def with_scopes(self, *any_of: str) -> BearerJWT:
        """The same scheme, accepting only tokens that carry at least one of ``any_of``."""
        return attrs.evolve(self, scopes=frozenset(any_of))

    credential = "bearer token"  # what a 401 for a request without one names
    challenge = "Bearer"

    def present(self, request: web.Request) -> bool:
        return "Authorization" in request.headers

    async def authenticate(self, request: web.Request) -> Principal:
        kind, _, token = request.headers["Authorization"].partition(" ")  # present()
        token = token.strip()
        if kind.lower() != "bearer" or not token or " " in token:
            raise unauthorized("malformed Authorization header")
        try:
            principal = await self.verifier.verify(token)
        except InvalidCredential:
            raise unauthorized(
                "invalid or expired bearer token", 'Bearer error="invalid_token"'
            ) from None
        return _require_scopes(principal, self.scopes, 'Bearer error="insufficient_scope"')

    def openapi(self) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}


@attrs.frozen
class ApiKey:
    """An API key in a named header or, with ``in_cookie``, a named cookie (a session cookie is
    declared this way); no HTTP challenge, so no ``WWW-Authenticate``."""

    name: str
    key_name: str
    checker: ApiKeyChecker = attrs.field(eq=False)
    in_cookie: bool = False
    scopes: frozenset[str] = frozenset()

    def with_scopes(self, *any_of: str) -> ApiKey:
        """The same scheme, accepting only principals that carry at least one of ``any_of``."""
        return attrs.evolve(self, scopes=frozenset(any_of))

    challenge = None  # an API key has no HTTP authentication scheme

    @property
    def credential(self) -> str:
        """What a 401 for a request without the key names: ``session cookie``."""
        return f"{self.key_name} {'cookie' if self.in_cookie else 'header'}"

    def _read(self, request: web.Request) -> str | None:
        if self.in_cookie:
            return request.cookies.get(self.key_name)
        return request.headers.get(self.key_name)

    def present(self, request: web.Request) -> bool:
        return self._read(request) is not None

    async def authenticate(self, request: web.Request) -> Principal:
        key = self._read(request)
        if not key:
            raise missing_credential((self,))
        try:
            principal = await self.checker.check(key)
        except InvalidCredential:
            raise unauthorized("invalid API key", None) from None
        return _require_scopes(principal, self.scopes, None)

    def openapi(self) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "cookie" if self.in_cookie else "header",
            "name": self.key_name,
        }


SecurityScheme = BearerJWT | ApiKey

AUTHENTICATED = web.RequestKey("authgate_principal", Principal)
"""The principal a request was authenticated as (absent when it was not): what runs after the
operation knows which credential the operation accepted, not merely which ones it carried."""


async def authenticate(
    request: web.Request, schemes: tuple[SecurityScheme, ...], optional: bool = False
) -> Principal | None:
    """Authenticate by the first scheme whose credential is present (recorded as
    :data:`AUTHENTICATED`); with none: None when ``optional``, else a 401."""
    for scheme in schemes:
        if scheme.present(request):
            principal = await scheme.authenticate(request)
            request[AUTHENTICATED] = principal
            return principal
    if optional:
        return None
    raise missing_credential(schemes)


def missing_credential(schemes: tuple[SecurityScheme, ...]) -> HttpError:
    """The 401 of a request without any credential ``schemes`` accept (``sign in first: no
    session cookie or bearer token``), with the first challenge of theirs."""
    wanted = " or ".join(scheme.credential for scheme in schemes)
    challenge = next((s.challenge for s in schemes if s.challenge is not None), None)
    return unauthorized(f"sign in first: no {wanted}", challenge)
