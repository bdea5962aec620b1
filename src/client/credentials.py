"""Where a request carries the session, and when a cookie-borne session may change things.

Framework-neutral: the aiohttp middleware and the FastAPI dependency both build on these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Literal
from urllib.parse import urlsplit

SESSION_COOKIE = "session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class MalformedAuthorization(Exception):
    """``Authorization: Bearer`` without exactly one token after it."""


@dataclasses.dataclass(frozen=True)
class Credential:
    """A session token and where it came from."""

    token: str
    source: Literal["bearer", "cookie"]


def credential_from(authorization: str | None, session_cookie: str | None) -> Credential | None:
    """The session token of a request, as authgate reads it: ``Authorization: Bearer <token>``
    first, else the ``session`` cookie; None when neither is present.

    An ``Authorization`` header of another scheme (``Basic``…) is not ours and is ignored; a
    ``Bearer`` one without exactly one token raises :class:`MalformedAuthorization`."""
    if authorization is not None:
        kind, _, token = authorization.strip().partition(" ")
        if kind.lower() == "bearer":
            token = token.strip()
            if not token or " " in token:
                raise MalformedAuthorization("malformed Authorization header")
            return Credential(token, "bearer")
    if session_cookie:
        return Credential(session_cookie, "cookie")
    return None


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL or an ``Origin`` value, lower case, without the
    scheme's default port (browsers never send it; a configured URL may)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    netloc = parts.netloc.lower().rpartition("@")[2]
    default = {"http": ":80", "https": ":443"}.get(scheme)
    if default and netloc.endswith(default):
        netloc = netloc.removesuffix(default)
    return f"{scheme}://{netloc}"


def same_origin(
    method: str,
    origin: str | None,
    fetch_site: str | None,
    own_origins: Iterable[str],
) -> bool:
    """Whether a request authenticated by the cookie may proceed (the CSRF defence).

    A browser attaches the cookie to requests other sites cause, so a state-changing request
    (any method but GET, HEAD, OPTIONS) must show it comes from one of ``own_origins``:
    ``Sec-Fetch-Site``, when sent, must be ``same-origin``; ``Origin``, when sent, must be one
    of ``own_origins``; and at least one of the two must be present (every current browser
    sends ``Origin`` on such requests; a non-browser client uses the bearer token). The same
    rule authgate applies to its own cookie-authenticated changes."""
    if method.upper() in SAFE_METHODS:
        return True
    if fetch_site is not None and fetch_site.strip().lower() != "same-origin":
        return False
    if origin is None:
        return fetch_site is not None
    return origin.strip() != "null" and origin_of(origin) in {origin_of(o) for o in own_origins}
