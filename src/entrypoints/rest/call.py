"""What an operation's handler receives (:class:`Call`) and may answer (:class:`Reply`)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from http.cookies import SimpleCookie
from typing import Any, Generic, TypeVar

import attrs
from aiohttp import hdrs, web
from multidict import CIMultiDict

from .params import Params
from .security import Principal

B = TypeVar("B")
R = TypeVar("R")


# Not frozen, though read-only by intent: made per request, where a frozen __init__ costs an
# object.__setattr__ per field (docs/benchmarks.md).
@attrs.define(slots=True)
class Call(Generic[B]):
    """What an operation receives: validated parameters, the typed body and the caller."""

    request: web.Request
    params: Params
    body: B
    principal: Principal | None

    @property
    def path(self) -> Mapping[str, str]:
        return self.params.path

    @property
    def query(self) -> Mapping[str, tuple[str, ...]]:
        return self.params.query


@attrs.frozen
class Cookie:
    """A ``Set-Cookie`` to send with a :class:`Reply`."""

    name: str
    value: str
    max_age: int | None = None
    path: str = "/"
    secure: bool = True
    httponly: bool = True
    samesite: str | None = "Lax"

    def set_on(self, response: web.StreamResponse) -> None:
        """Set (or replace) this cookie on ``response`` as aiohttp's ``set_cookie`` would."""
        headers = response.headers
        if hdrs.SET_COOKIE in headers:
            _drop_cookie(headers, self.name)
        headers.add(hdrs.SET_COOKIE, self.header_value())

    def header_value(self) -> str:
        """The ``Set-Cookie`` value, character for character what ``http.cookies`` makes of it
        through aiohttp's ``set_cookie`` (attributes in its sorted order). The usual cookie (a
        token, a path, a same-site value with nothing to quote) is written here; any other goes
        through ``http.cookies`` itself (its ``Morsel`` cost ~2 % of a sign-in)."""
        if not (
            _LEGAL.fullmatch(self.name)
            and _LEGAL.fullmatch(self.value)
            and _PLAIN.fullmatch(self.path)
            and (self.samesite is None or _PLAIN.fullmatch(self.samesite))
        ):
            return self._through_morsel()
        parts = [f"{self.name}={self.value}"]
        if self.httponly:
            parts.append("HttpOnly")
        if self.max_age is not None:
            parts.append(f"Max-Age={self.max_age}")
        parts.append(f"Path={self.path}")
        if self.samesite is not None:
            parts.append(f"SameSite={self.samesite}")
        if self.secure:
            parts.append("Secure")
        return "; ".join(parts)

    def _through_morsel(self) -> str:
        # What aiohttp's StreamResponse.set_cookie and _prepare_headers do (aiohttp 3.14).
        jar: SimpleCookie = SimpleCookie()
        jar[self.name] = self.value  # CookieError for an illegal name, as aiohttp raises
        morsel = jar[self.name]
        if self.max_age is not None:
            morsel["max-age"] = str(self.max_age)
        morsel["path"] = self.path
        morsel["secure"] = self.secure
        morsel["httponly"] = self.httponly
        if self.samesite is not None:
            morsel["samesite"] = self.samesite
        return morsel.output(header="")[1:]


# http.cookies' legal characters of a key and an unquoted value (its _LegalChars), non-empty
# (an empty value is written quoted, ""); attribute values written as they are when they hold
# nothing that could end or split the header.
_LEGAL = re.compile(r"[A-Za-z0-9!#$%&'*+\-.^_`|~:]+")
_PLAIN = re.compile(r"[!#-+\--:<-~]+")


def _drop_cookie(headers: CIMultiDict[str], name: str) -> None:
    """Remove the ``Set-Cookie`` of ``name`` (replaced, as aiohttp's ``set_cookie`` does)."""
    values = headers.getall(hdrs.SET_COOKIE)
    kept = [v for v in values if v.partition("=")[0] != name]
    if len(kept) != len(values):
        del headers[hdrs.SET_COOKIE]
        for value in kept:
            headers.add(hdrs.SET_COOKIE, value)


def sets_cookie(response: web.StreamResponse, name: str) -> bool:
    """Whether ``response`` already sets the cookie ``name`` (either way of setting it)."""
    if any(v.partition("=")[0] == name for v in response.headers.getall(hdrs.SET_COOKIE, ())):
        return True
    return name in response.cookies


@attrs.frozen
class Reply(Generic[R]):
    """A response with its own status, headers or cookies; ``body`` may be None, and without a
    ``status`` the operation's own success status applies."""

    body: R | None = None
    status: int | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    cookies: tuple[Cookie, ...] = ()


Handler = Callable[[Call[Any]], Awaitable[Any]]
