"""Per-request OpenTelemetry server spans, by a lean middleware of our own.

One span per request named ``METHOD /route/{template}`` (the matched route's shape, never the
concrete path), the W3C ``traceparent`` of the caller honoured, the status and route recorded.
The query string, headers, cookies and bodies are never recorded: they carry codes, states and
credentials.

The contrib aiohttp-server instrumentation was measured to halve throughput even with the SDK
off; this middleware costs one span and a handful of attributes (see docs/benchmarks.md).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

from aiohttp import web
from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

Middleware = Callable[
    [web.Request, Callable[[web.Request], Awaitable[web.StreamResponse]]],
    Awaitable[web.StreamResponse],
]


def make_tracer_provider(service_name: str, exporter: SpanExporter | None = None) -> TracerProvider:
    """An SDK tracer provider; OTLP/HTTP export when ``OTEL_EXPORTER_OTLP_*`` is set."""
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    if exporter is None and any(k.startswith("OTEL_EXPORTER_OTLP_") for k in os.environ):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def tracing_middleware(tracer: trace.Tracer) -> Middleware:
    """A middleware that wraps every request in a server span."""
    extract = propagate.extract
    start_span = tracer.start_span
    attach, detach = context.attach, context.detach
    with_span = trace.set_span_in_context
    server = SpanKind.SERVER

    @web.middleware
    async def trace_request(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else None
        method = request.method
        attributes: dict[str, str] = {
            "http.request.method": method,
            "url.path": request.path,
            "url.scheme": request.scheme,
        }
        if route is not None:
            attributes["http.route"] = route
        # start_span + attach rather than start_as_current_span: the same span made current the
        # same way, without two generator-based context managers per request (benchmarks.md).
        span = start_span(
            f"{method} {route}" if route is not None else method,
            context=extract(request.headers),
            kind=server,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        token = attach(with_span(span))
        try:
            response = await handler(request)
        except web.HTTPException as e:
            _record_status(span, e.status)
            raise
        except BaseException:
            span.set_status(Status(StatusCode.ERROR))
            raise
        else:
            _record_status(span, response.status)
            return response
        finally:
            detach(token)
            span.end()

    return trace_request


def _record_status(span: trace.Span, status: int) -> None:
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR))
