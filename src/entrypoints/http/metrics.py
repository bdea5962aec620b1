"""Request durations for metrics (``http.server.request.duration``), by a lean middleware."""

from __future__ import annotations

import time
from collections.abc import Callable

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

# (method, route template or None, status, seconds)
RecordRequest = Callable[[str, str | None, int, float], None]


def metrics_middleware(record: RecordRequest) -> Middleware:
    """A middleware reporting each request's method, route template, status and duration
    to ``record``; never the concrete path, the query or anything else the client sent."""
    clock = time.perf_counter

    @web.middleware
    async def measure(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = clock()
        status = 500  # an exception that is not an HTTP answer ends as a 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as e:
            status = e.status
            raise
        finally:
            resource = request.match_info.route.resource
            route = resource.canonical if resource is not None else None
            record(request.method, route, status, clock() - started)

    return measure
