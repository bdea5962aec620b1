"""What an operation's handler receives (:class:`Call`) and may answer (:class:`Reply`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

import attrs
from aiohttp import web

from .params import Params
from .security import Principal

B = TypeVar("B")
R = TypeVar("R")


# Not frozen, though read-only by intent: one is made per request, and attrs' frozen __init__
# (an object.__setattr__ per field) cost about 1.5 % of a request's instructions (issue 13).
@attrs.define(slots=True)
class Call(Generic[B]):
    """What an operation receives: validated parameters, the typed body and the caller
    (read-only: a handler reads it)."""

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
        response.set_cookie(
            self.name,
            self.value,
            max_age=self.max_age,
            path=self.path,
            secure=self.secure,
            httponly=self.httponly,
            samesite=self.samesite,
        )


@attrs.frozen
class Reply(Generic[R]):
    """A response with its own status, headers or cookies (201, 202, …); ``body`` may be None.

    Without ``status`` the operation's own success status applies (200, 204 or its declared one).
    """

    body: R | None = None
    status: int | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    cookies: tuple[Cookie, ...] = ()


Handler = Callable[[Call[Any]], Awaitable[Any]]
