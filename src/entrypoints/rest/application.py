"""The aiohttp application an :class:`~.api.Api` serves on: every failure answered as JSON and no
``Server`` header, without aiohttp's middleware and signal machinery on the way of each request.

Two things must happen to every request the application answers, whatever route (or none)
serves it: an exception, a router error (404, 405) or an aiohttp error (413) becomes the
contract's JSON answer (:mod:`.errors`), and no answer names the server software in a
``Server`` header (aiohttp adds ``Server: Python/3.x aiohttp/3.x`` to each). aiohttp's public
means for them, a middleware and an ``on_response_prepare`` receiver, cost about 8 % of the
instructions of a request on the REST benchmark (issue 13, bench/rest_instructions.py): as
soon as an application has any middleware, aiohttp wraps every handler in one of its own
(``_fix_request_current_app``) besides ours, and builds or looks up the chain per request; a
signal is two coroutines more per response. :class:`RestApplication` does the same work in the
two places aiohttp already passes through once per request:

* its ``_handle`` (what aiohttp's server calls with each request: routing, then the handler)
  runs inside the error handling, as the innermost middleware did: the middleware's own code
  (:func:`~.errors.error_handler`, with the hooks of :func:`install_request_hooks` folded in),
  with aiohttp's own ``_handle`` as the handler; with a tracer, that runs inside the server
  span (:func:`~.tracing.traced_dispatch`), as under the tracing middleware: the span records
  the final status, the error handling's answer included, and gets its name and route as
  aiohttp's routing sets the request's ``_match_info`` (a descriptor of its class), before the
  handler runs, as the middleware had them;
* its requests are of a subclass whose ``_prepare_hook`` (what every response, including
  aiohttp's own and those a handler prepares itself, awaits between filling in its default
  headers and writing them) drops ``Server`` and, for the operations that opted into CORS, adds
  the CORS headers, then lets ``on_response_prepare`` receivers run if anyone added some.

Both are aiohttp internals (``Application._handle``, ``Application._make_request`` and its
``_cls`` parameter, ``Request._prepare_hook``, ``Request._match_info``), long-standing but not
public: when they are not as expected (:data:`FAST_PATH` False), :meth:`Api.app` builds a plain
application with the error middleware, a signal receiver and the tracing middleware instead,
with the same answers and spans. The tests assert both the answers and that the fast path is in
use.

Middlewares given to :meth:`Api.app` run outside the error handling, as they always have: the
application then keeps the error middleware as the innermost one (and the tracing middleware,
:func:`~.tracing.tracing_middleware`, outermost when there is a tracer), and only the ``Server``
header takes the fast path.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from types import FunctionType, MethodType

from aiohttp import web
from aiohttp.typedefs import Middleware
from aiohttp.web_urldispatcher import UrlMappingMatchInfo
from opentelemetry import trace

from .cors import add_cors
from .errors import AfterSuccess, RecordRequest, error_handler, error_middleware
from .tracing import SPAN_ATTRIBUTE, routed, traced_dispatch, tracing_middleware


def _internals_as_expected() -> bool:
    """Whether the aiohttp internals :class:`RestApplication` relies on are there, as they are
    in aiohttp 3.14 (the locked version)."""
    make_request = getattr(web.Application, "_make_request", None)
    try:
        parameters = list(inspect.signature(make_request).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return (
        isinstance(make_request, FunctionType)
        and parameters == ["self", "message", "payload", "protocol", "writer", "task", "_cls"]
        and make_request.__defaults__ == (web.Request,)
        and inspect.iscoroutinefunction(getattr(web.Application, "_handle", None))
        and inspect.iscoroutinefunction(getattr(web.Request, "_prepare_hook", None))
    )


FAST_PATH = _internals_as_expected()
"""Whether :class:`RestApplication` may be used with the installed aiohttp."""

_SERVER = "Server"


class _Request(web.Request):
    """A request whose answers, every one, leave without ``Server``."""

    ATTRS = web.Request.ATTRS | frozenset({SPAN_ATTRIBUTE, "_rest_match_info"})

    # Set per application on a subclass (_request_class), read per response.
    _rest_cors = False  # add the CORS headers of an operation that opted into CORS
    _rest_signals = True  # on_response_prepare receivers to run
    # Per request, of a traced application's: its server span until routed, its match info.
    _rest_span = None
    _rest_match_info: UrlMappingMatchInfo | None = None

    async def _prepare_hook(self, response: web.StreamResponse) -> None:
        # Called by aiohttp after it filled in the default headers, before writing them.
        response.headers.popall(_SERVER, None)
        if self._rest_cors:
            add_cors(self, response)
        if self._rest_signals:
            await super()._prepare_hook(response)


class _MatchInfo:
    """The ``_match_info`` of a traced application's requests, which aiohttp's ``_handle`` sets
    once it has routed the request, before the handler: the request's server span gets its
    name and route then (:func:`~.tracing.routed`), as the tracing middleware had them."""

    def __get__(self, request: _Request | None, owner: object = None) -> object:
        if request is None:
            return self
        return request._rest_match_info

    def __set__(self, request: _Request, match_info: UrlMappingMatchInfo) -> None:
        request._rest_match_info = match_info
        routed(request, match_info)


_REQUEST_CLASSES: dict[tuple[bool, bool, bool], type[_Request]] = {}


def _request_class(cors: bool, signals: bool, traced: bool = False) -> type[_Request]:
    found = _REQUEST_CLASSES.get((cors, signals, traced))
    if found is None:
        attributes: dict[str, object] = {
            "_rest_cors": cors,
            "_rest_signals": signals,
            "__module__": __name__,
        }
        if traced:
            attributes["_match_info"] = _MatchInfo()
        name = f"Request_{int(cors)}{int(signals)}{int(traced)}"
        found = type(name, (_Request,), attributes)
        _REQUEST_CLASSES[(cors, signals, traced)] = found
    return found


def _request_factory(app: web.Application, cls: type[web.Request]) -> Callable[..., web.Request]:
    """``app._make_request`` making requests of ``cls``: aiohttp's own function (its code, so
    whatever it passes to the request's constructor), with ``cls`` as the default of its
    ``_cls`` parameter instead of :class:`aiohttp.web.Request`. Not a method calling it: that
    would be one Python call more per request."""
    base = web.Application._make_request
    assert isinstance(base, FunctionType)
    made = FunctionType(base.__code__, base.__globals__, base.__name__, (cls,), base.__closure__)
    made.__kwdefaults__ = base.__kwdefaults__
    made.__qualname__ = base.__qualname__
    return MethodType(made, app)


with warnings.catch_warnings():
    # aiohttp discourages subclassing its Application (a DeprecationWarning at class creation):
    # this one replaces two of its internal methods, checked by FAST_PATH and by the tests.
    warnings.simplefilter("ignore", DeprecationWarning)

    class RestApplication(web.Application):
        """An :class:`aiohttp.web.Application` that answers every failure as JSON and never
        sends ``Server``, without a middleware or a signal (see the module's documentation).

        Use it as any application (routes added later, files, pages are covered too), served
        as the root one (aiohttp calls the root's ``_handle``); build it through
        :meth:`~.api.Api.app`. Middlewares appended to it later run inside the error handling.
        With ``tracer`` (and no ``middlewares``), every request is in a server span, outside
        the error handling, again without a middleware.
        """

        ATTRS = web.Application.ATTRS | frozenset(
            {"_rest_guarded", "_rest_after", "_rest_record", "_rest_cors", "_rest_tracer"}
            | {"_handle", "_make_request"}
        )

        def __init__(
            self,
            *,
            middlewares: tuple[Middleware, ...],
            cors: bool,
            client_max_size: int,
            tracer: trace.Tracer | None = None,
        ) -> None:
            # With middlewares of the caller's, the error handling stays the innermost
            # middleware so that they see its answers, as they always have; tracing, the
            # outermost one.
            if middlewares and tracer is not None:
                middlewares = (tracing_middleware(tracer), *middlewares)
                tracer = None
            super().__init__(
                middlewares=(*middlewares, error_middleware) if middlewares else (),
                client_max_size=client_max_size,
            )
            self._rest_guarded = not middlewares
            self._rest_after: AfterSuccess | None = None
            self._rest_record: RecordRequest | None = None
            self._rest_cors = cors
            self._rest_tracer = tracer

        def set_hooks(
            self, *, after: AfterSuccess | None = None, record: RecordRequest | None = None
        ) -> bool:
            """Fold ``after`` and ``record`` into the error handling (as
            :func:`~.errors.error_middleware_with` does); False, nothing done, when the error
            handling is a middleware here."""
            if self.frozen:
                raise RuntimeError("the application is frozen: it serves already")
            if not self._rest_guarded:
                return False
            self._rest_after, self._rest_record = after, record
            return True

        def freeze(self) -> None:
            if self.frozen:
                return
            super().freeze()
            # aiohttp's server takes both from the application once frozen (_make_handler).
            # Bound as attributes, not overriding methods: a method calling aiohttp's would be
            # one Python call more per request for each (about 1 % of its instructions).
            if self._rest_guarded:
                handle = error_handler(
                    super()._handle, after=self._rest_after, record=self._rest_record
                )
                if self._rest_tracer is not None:
                    handle = traced_dispatch(handle, self._rest_tracer)
                self._handle = handle  # type: ignore[method-assign,assignment]
            # on_response_prepare is frozen now: its receivers (of this application or of a
            # sub-application) are known once for all.
            signals = bool(self.on_response_prepare) or any(
                isinstance(r, web.PrefixedSubAppResource) for r in self.router.resources()
            )
            traced = self._rest_guarded and self._rest_tracer is not None
            self._make_request = _request_factory(  # type: ignore[method-assign]
                self, _request_class(self._rest_cors, signals, traced)
            )


def install_request_hooks(
    app: web.Application, *, after: AfterSuccess | None = None, record: RecordRequest | None = None
) -> bool:
    """Fold ``after`` (run on each successful answer, before the error handling) and
    ``record`` (each request's method, route, final status and duration) into the error
    handling of an :meth:`~.api.Api.app` application, as :func:`~.errors.error_middleware_with`
    does; False, nothing done, for an application whose error handling is a middleware
    (middlewares were given to :meth:`~.api.Api.app`, or the fast path is not available): the
    caller then adds middlewares of its own."""
    if not isinstance(app, RestApplication):
        return False
    return app.set_hooks(after=after, record=record)
