"""Routes on aiohttp with OpenAPI's precedence: a concrete path before a templated one.

aiohttp tries routes in registration order and joins the methods of every route whose path
matches into a 405's ``Allow``. OpenAPI expects the URL of a static path (``/v1/auth/logout``)
to be that path's resource alone, not also a value of a templated sibling
(``/v1/auth/{provider}``): its other methods answer 405 with its own ``Allow``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping

from aiohttp import web

RouteHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_STATIC_METHODS = web.AppKey("authgate_static_methods", dict[str, set[str]])


def add_routes(app: web.Application, routes: Iterable[tuple[str, str, RouteHandler]]) -> None:
    """Add ``(method, path template, handler)`` routes; static paths take precedence."""
    # Static paths first: aiohttp tries resources in registration order, so a method a static
    # path serves (OPTIONS included) is never caught by a templated sibling registered earlier.
    routes = sorted(routes, key=lambda route: "{" in route[1])
    static: dict[str, set[str]] = {}
    for method, path, _ in routes:
        # OPTIONS routes only answer CORS preflights (a plain OPTIONS is refused), so OPTIONS
        # is no method of the resource's Allow.
        if "{" not in path and method.upper() != "OPTIONS":
            static.setdefault(path, set()).add(method.upper())
    app[_STATIC_METHODS] = static
    for method, path, handler in routes:
        shadowed = {p: m for p, m in static.items() if _template_matches(path, p)}
        # No route name: a handler may serve several paths (one per version prefix) and
        # aiohttp refuses duplicate names.
        app.router.add_route(method, path, _off_static(handler, shadowed) if shadowed else handler)


def static_methods(request: web.Request) -> set[str] | None:
    """The methods of the static path the request names, or None if it names none."""
    return request.app.get(_STATIC_METHODS, {}).get(request.path)


def _template_matches(template: str, path: str) -> bool:
    """Whether a concrete path is also a value of a path template (``{x}`` = one segment)."""
    if "{" not in template:
        return False
    pattern = re.sub(r"\\\{[^/]*?\\\}", "[^/]+", re.escape(template))
    return re.fullmatch(pattern, path) is not None


def _off_static(handler: RouteHandler, static: Mapping[str, set[str]]) -> RouteHandler:
    """A templated route's handler that leaves the URLs of static paths alone."""

    async def handle(request: web.Request) -> web.StreamResponse:
        allowed = static.get(request.path)
        if allowed is not None:
            raise web.HTTPMethodNotAllowed(request.method, allowed)
        return await handler(request)

    return handle
