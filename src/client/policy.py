"""The one decision both framework adapters make: which session a request has, or which
answer refuses it. The answers are authgate's own (401 ``unauthorized`` with
``WWW-Authenticate: Bearer``, 403 ``insufficient_scope``, 403 ``cross_site_request``)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping

from .credentials import Credential, MalformedAuthorization, credential_from, same_origin
from .introspection import IntrospectionUnavailable
from .keys import KeySetUnavailable
from .verifier import InvalidSession, Session, SessionVerifier

log = logging.getLogger("authgate.client")


class Refusal(Exception):
    """The answer that refuses a request: status, JSON body and headers."""

    def __init__(self, status: int, body: Mapping[str, str], headers: Mapping[str, str]) -> None:
        super().__init__(status, body.get("error"))
        self.status = status
        self.body = body
        self.headers = headers


def unauthorized(message: str, challenge: str = "Bearer") -> Refusal:
    return Refusal(
        401, {"error": "unauthorized", "message": message}, {"WWW-Authenticate": challenge}
    )


@dataclasses.dataclass(frozen=True)
class SessionPolicy:
    """What a framework adapter asks of every request (see :func:`authenticate`): its
    ``origins`` for the cross-site check (none: the origin each request was made to)."""

    verifier: SessionVerifier
    required_scopes: frozenset[str]
    optional: bool
    origins: tuple[str, ...]
    cookie_name: str

    async def session_of(
        self, method: str, headers: Mapping[str, str], cookies: Mapping[str, str], own: str
    ) -> Session | None:
        """The verified session of a request with these headers and cookies, made to the
        origin ``own``; raises :class:`Refusal`."""
        return await authenticate(
            self.verifier,
            method=method,
            authorization=headers.get("Authorization"),
            session_cookie=cookies.get(self.cookie_name),
            origin=headers.get("Origin"),
            fetch_site=headers.get("Sec-Fetch-Site"),
            own_origins=self.origins or (own,),
            required_scopes=self.required_scopes,
            optional=self.optional,
        )


async def authenticate(
    verifier: SessionVerifier,
    *,
    method: str,
    authorization: str | None,
    session_cookie: str | None,
    origin: str | None,
    fetch_site: str | None,
    own_origins: Iterable[str],
    required_scopes: frozenset[str],
    optional: bool,
) -> Session | None:
    """The request's verified session (None: anonymous, only when ``optional``); raises
    :class:`Refusal`.

    With ``optional``, a request without a session, or whose ``session`` cookie no longer
    verifies (expired, signed by a withdrawn key), is anonymous; a bearer token that does not
    verify is still refused: its sender meant to authenticate."""
    try:
        credential = credential_from(authorization, session_cookie)
    except MalformedAuthorization as e:
        raise unauthorized(str(e)) from None
    if credential is None:
        if optional:
            return None
        raise unauthorized("missing session (bearer token or session cookie)")
    session = await _verified(verifier, credential, optional)
    if session is None:
        return None
    if credential.source == "cookie" and not same_origin(method, origin, fetch_site, own_origins):
        raise _cross_site()
    if not session.has_scopes(required_scopes):
        raise Refusal(
            403,
            {
                "error": "insufficient_scope",
                "message": "the session lacks the required scope: "
                + ", ".join(sorted(required_scopes)),
            },
            {"WWW-Authenticate": 'Bearer error="insufficient_scope"'},
        )
    return session


def _cross_site() -> Refusal:
    """The refusal of a cookie-authenticated request from another site's page."""
    return Refusal(
        403,
        {
            "error": "cross_site_request",
            "message": "a request authenticated by the session cookie must come from "
            "this site's own pages (Origin / Sec-Fetch-Site); other clients use the "
            "bearer token",
        },
        {},
    )


async def _verified(
    verifier: SessionVerifier, credential: Credential, optional: bool
) -> Session | None:
    """The session of ``credential``; None for a session cookie that no longer verifies on
    an ``optional`` request. Raises :class:`Refusal`."""
    try:
        return await verifier.verify(credential.token)
    except InvalidSession as e:
        log.info("session refused (%s): %s", credential.source, e.reason)
        if optional and credential.source == "cookie":
            return None
        raise unauthorized("invalid or expired session", 'Bearer error="invalid_token"') from None
    except (KeySetUnavailable, IntrospectionUnavailable) as e:
        log.warning("session not verifiable: %s", e)
        raise Refusal(
            503,
            {
                "error": "temporarily_unavailable",
                "message": "the session cannot be verified right now",
            },
            {"Retry-After": "5"},
        ) from None
