"""The browser binding cookie, which ties a pending sign-in or a passkey challenge to the browser
that started it, and the cookies a sign-out clears. ``__Host-``: no sibling subdomain can plant
it; ``SameSite=None``: a provider's ``form_post`` callback is a cross-site POST."""

from __future__ import annotations

import re

from aiohttp import web

from authgate.domain.secrets import new_secret
from authgate.entrypoints.http.common.session_auth import SESSION_COOKIE
from authgate.entrypoints.rest import Cookie

BINDING_COOKIE = "__Host-authgate_binding"
BINDING_PATH = "/"
BINDING_FORMAT = re.compile(r"^[A-Za-z0-9_-]{32,128}$")
# The name before the prefix: cleared at sign-out for browsers that still hold it.
LEGACY_BINDING_COOKIE = ("authgate_binding", "/v1/auth")


def held_binding(request: web.Request) -> str | None:
    """The binding the browser holds, when it is one this service could have made."""
    binding = request.cookies.get(BINDING_COOKIE, "")
    return binding if BINDING_FORMAT.match(binding) else None


def binding_cookie(binding: str, max_age: int) -> Cookie:
    """The ``Set-Cookie`` of a binding."""
    return Cookie(BINDING_COOKIE, binding, max_age=max_age, path=BINDING_PATH, samesite="None")


def binding_of(request: web.Request, max_age: int) -> tuple[str, tuple[Cookie, ...]]:
    """The browser's binding, or a new one and its ``Set-Cookie``."""
    binding = held_binding(request)
    if binding is not None:
        return binding, ()
    binding = new_secret()
    return binding, (binding_cookie(binding, max_age),)


def cleared_cookies() -> tuple[Cookie, ...]:
    """The session cookie and the binding cookie, cleared (a deleted account's)."""
    return (Cookie(SESSION_COOKIE, "", max_age=0), binding_cookie("", 0))


def signed_out_cookies() -> tuple[Cookie, ...]:
    """What a sign-out sets: the session cookie and the binding cookies cleared."""
    legacy, legacy_path = LEGACY_BINDING_COOKIE
    return (
        *cleared_cookies(),
        Cookie(legacy, "", max_age=0, path=legacy_path, samesite="None"),
    )
