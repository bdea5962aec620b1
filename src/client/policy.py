"""The one decision both framework adapters make: which session a request has, or which
answer refuses it. The answers are authgate's own (docs/integration.md, "The answers")."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from .credentials import Credential, MalformedAuthorization, credential_from, same_origin
from .introspection import IntrospectionUnavailable
from .keys import KeySetUnavailable
from .verifier import InvalidSession, Session, SessionVerifier

log = logging.getLogger("authgate.client")


class Refusal(Exception):
    """The answer that refuses a request: status, JSON body (authgate's error object) and
    headers (never cached)."""

    def __init__(
        self, status: int, error: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(status, error)
        self.status = status
        self.body = {"error": error, "message": message}
        self.headers = {**(headers or {}), "Cache-Control": "no-store"}


def unauthorized(message: str, challenge: str = "Bearer") -> Refusal:
    return Refusal(401, "unauthorized", message, {"WWW-Authenticate": challenge})


@dataclasses.dataclass(frozen=True)
class SessionPolicy:
    """What a framework adapter asks of every request: its ``origins`` for the cross-site
    check (none: the origin each request was made to)."""

    verifier: SessionVerifier
    required_scopes: frozenset[str]
    optional: bool
    origins: tuple[str, ...]
    cookie_name: str

    async def session_of(
        self, method: str, headers: Mapping[str, str], cookies: Mapping[str, str], own: str
    ) -> Session | None:
        """The verified session of a request with these headers and cookies, made to the
        origin ``own`` (None: anonymous, only when ``optional``); raises :class:`Refusal`.

        With ``optional``, a request without a session, or whose ``session`` cookie no longer
        verifies (expired, signed by a withdrawn key), is anonymous; a bearer token that does
        not verify is still refused: its sender meant to authenticate."""
        try:
            credential = credential_from(
                headers.get("Authorization"), cookies.get(self.cookie_name)
            )
        except MalformedAuthorization as e:
            raise unauthorized(str(e)) from None
        if credential is None:
            if self.optional:
                return None
            raise unauthorized("missing session (bearer token or session cookie)")
        session = await self._verified(credential)
        if session is None:
            return None
        if credential.source == "cookie" and not same_origin(
            method, headers.get("Origin"), headers.get("Sec-Fetch-Site"), self.origins or (own,)
        ):
            raise Refusal(
                403,
                "cross_site_request",
                "a request authenticated by the session cookie must come from this site's own "
                "pages (Origin / Sec-Fetch-Site); other clients use the bearer token",
            )
        if not session.has_scopes(self.required_scopes):
            raise Refusal(
                403,
                "insufficient_scope",
                "the session lacks the required scope: " + ", ".join(sorted(self.required_scopes)),
                {"WWW-Authenticate": 'Bearer error="insufficient_scope"'},
            )
        return session

    async def _verified(self, credential: Credential) -> Session | None:
        """The session of ``credential``; None for a session cookie that no longer verifies on
        an ``optional`` request. Raises :class:`Refusal`."""
        try:
            return await self.verifier.verify(credential.token)
        except InvalidSession as e:
            log.info("session refused (%s): %s", credential.source, e.reason)
            if self.optional and credential.source == "cookie":
                return None
            raise unauthorized(
                "invalid or expired session", 'Bearer error="invalid_token"'
            ) from None
        except (KeySetUnavailable, IntrospectionUnavailable) as e:
            log.warning("session not verifiable: %s", e)
            raise Refusal(
                503,
                "temporarily_unavailable",
                "the session cannot be verified right now",
                {"Retry-After": "5"},
            ) from None
