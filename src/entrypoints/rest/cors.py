"""Cross-origin resource sharing (the Fetch standard's CORS protocol) for the operations that
opt into it: ``cors=Cors([...])`` lets pages of exactly those origins call them with credentials.

* Every answer carries ``Vary: Origin`` and, for an allowed ``Origin``,
  ``Access-Control-Allow-Origin`` = that origin (never ``*``: browsers refuse a wildcard with
  credentials, and it would hand the answer to every site) and
  ``Access-Control-Allow-Credentials: true``.
* A request with cookies whose ``Origin`` is neither allowed nor the service's own
  (``own_origins``; none configured: the origin the request was made to) is refused, 403
  ``origin_not_allowed`` without CORS headers, before the operation runs: a "simple" GET or
  POST needs no preflight, so the operation would otherwise run with a cookie the browser
  attached on another origin's behalf. A request without cookies is not refused: a page can
  send ``Authorization`` to another origin only after a preflight, which a disallowed origin
  fails (and one without any credential is refused by the operation's security).
* ``OPTIONS`` on the operation's path answers the preflight: 204 with the allowed methods,
  headers and ``Max-Age`` for an allowed origin, 403 without CORS headers for any other. An
  ``OPTIONS`` that is not a preflight is refused (405) as on any other path.

``credentials=False`` is for operations that never read the browser's credentials (an OAuth
endpoint authenticated by what the page itself sends): no ``Access-Control-Allow-Credentials``
(a browser keeps the answer from a page whose request carried cookies) and no refusal of
cookie-bearing requests. Preflights are not operations: they are not in the OpenAPI document.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

import attrs
from aiohttp import hdrs, web
from multidict import CIMultiDict

from .errors import HttpError, RouteHandler, layer_error


def normalise_origin(value: str) -> str:
    """``scheme://host[:port]`` as a browser sends it in ``Origin`` (lower case, no default port);
    ValueError for anything else (a path, user-info, a wildcard, a scheme but http/https)."""
    text = value.strip()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or "*" in text:
        raise ValueError(f"{value!r} is not an origin (scheme://host[:port])")
    if parts.username is not None or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{value!r} is not an origin (scheme://host[:port], nothing after)")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{value!r} has an invalid port") from None
    netloc = parts.netloc.lower()
    if port is not None and port == {"http": 80, "https": 443}[scheme]:
        netloc = netloc.rpartition(":")[0]
    return f"{scheme}://{netloc}"


def _origins(values: Iterable[str]) -> frozenset[str]:
    if isinstance(values, str):
        raise TypeError("allowed_origins is a list of origins, not one string")
    return frozenset(normalise_origin(v) for v in values)


@attrs.frozen
class Cors:
    """Which origins may call an operation from a browser: ``allowed_origins`` are exact origins
    (``*`` refused); ``allow_headers`` and ``expose_headers`` are besides the safelisted ones;
    ``max_age`` is how long (seconds) a browser may reuse a preflight's answer."""

    allowed_origins: frozenset[str] = attrs.field(converter=_origins)
    allow_headers: tuple[str, ...] = ("Authorization", "Content-Type")
    expose_headers: tuple[str, ...] = ()
    max_age: int = 600
    # The service's own public origins (its pages call it same-origin, without CORS); empty:
    # the origin each request was made to (its scheme and Host).
    own_origins: frozenset[str] = attrs.field(converter=_origins, factory=frozenset)
    credentials: bool = True

    def allows(self, sent: str | None) -> str | None:
        """The origin to echo in ``Access-Control-Allow-Origin``, or None when not allowed."""
        if sent is None:
            return None
        try:
            normalised = normalise_origin(sent)
        except ValueError:
            return None  # "null" (sandboxed frames, data: URLs) and anything malformed
        return normalised if normalised in self.allowed_origins else None

    def refuses(self, request: web.BaseRequest) -> bool:
        """Whether ``request`` carries cookies and an ``Origin`` neither allowed nor the service's
        own (``null`` and malformed values included)."""
        sent = request.headers.get("Origin")
        if not self.credentials or sent is None or hdrs.COOKIE not in request.headers:
            return False
        try:
            normalised = normalise_origin(sent)
        except ValueError:
            return True
        if normalised in self.allowed_origins or normalised in self.own_origins:
            return False
        if self.own_origins:
            return True
        try:
            return normalised != normalise_origin(f"{request.scheme}://{request.host}")
        except ValueError:
            return True

    def response_headers(self, request: web.BaseRequest) -> dict[str, str]:
        """The CORS headers of an actual (not preflight) answer to ``request``."""
        allowed = self.allows(request.headers.get("Origin"))
        if allowed is None:
            return {}
        headers = {"Access-Control-Allow-Origin": allowed}
        if self.credentials:
            headers["Access-Control-Allow-Credentials"] = "true"
        if self.expose_headers:
            headers["Access-Control-Expose-Headers"] = ", ".join(self.expose_headers)
        return headers

    def add_to(self, request: web.BaseRequest, response: web.StreamResponse) -> None:
        """The CORS headers of an answer of this operation, on a response being prepared."""
        _add_vary(response.headers, "Origin")
        response.headers.update(self.response_headers(request))

    def admit(self, request: web.Request) -> None:
        """Before the operation's handler: marks the request (:data:`CORS_OPERATION`) for the
        response hook, so that every answer has the headers, even an unexpected 500, and
        refuses other origins' requests (:meth:`refuses`) with a 403. The operation's
        :class:`~.operation.Invoker` calls it (no coroutine of its own per request)."""
        request[CORS_OPERATION] = self
        if self.refuses(request):
            raise HttpError(403, _REFUSED)

    def preflight(self, methods: Iterable[str]) -> RouteHandler:
        """The ``OPTIONS`` handler of a path whose operations (``methods``) opt into CORS."""
        allowed_methods = sorted({m.upper() for m in methods})
        granted = {"Access-Control-Allow-Credentials": "true"} if self.credentials else {}
        granted |= {
            "Access-Control-Allow-Methods": ", ".join(allowed_methods),
            "Access-Control-Allow-Headers": ", ".join(self.allow_headers),
            "Access-Control-Max-Age": str(self.max_age),
            "Vary": "Origin",
        }

        async def answer(request: web.Request) -> web.StreamResponse:
            sent = request.headers.get("Origin")
            if sent is None or "Access-Control-Request-Method" not in request.headers:
                # Not a preflight: OPTIONS is not an operation of this path.
                raise web.HTTPMethodNotAllowed(request.method, allowed_methods)
            allowed = self.allows(sent)
            if allowed is None:
                return _PREFLIGHT_REFUSED.response()
            return web.Response(
                status=204, headers={"Access-Control-Allow-Origin": allowed, **granted}
            )

        return answer


CORS_OPERATION = web.RequestKey("authgate_cors", Cors)
"""Set on a request of an operation that opted into CORS: its :class:`Cors`."""
_REFUSED = {
    "error": "origin_not_allowed",
    "message": "this operation may be called from a browser only by pages of the service's "
    "own origin or of the configured allowed origins",
}
_PREFLIGHT_REFUSED = layer_error(
    403,
    "origin_not_allowed",
    "pages of this origin may not call this operation from a browser",
    {"Vary": "Origin"},
)


def _add_vary(headers: CIMultiDict[str], name: str) -> None:
    present = [v.strip().lower() for v in headers.get("Vary", "").split(",") if v.strip()]
    if name.lower() not in present and "*" not in present:
        value = headers.get("Vary")
        headers["Vary"] = f"{value}, {name}" if value else name
