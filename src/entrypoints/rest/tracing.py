"""Per-request OpenTelemetry server spans (:func:`tracing_middleware`), named
``METHOD /route/{template}`` (never the concrete path), the caller's W3C ``traceparent``
honoured, the status and route recorded; never the query string, headers, cookies or bodies,
which carry codes, states and credentials. (The contrib aiohttp-server instrumentation halves
throughput even with the SDK off.)

For an SDK tracer configured the way it can be reproduced exactly (``ParentBased(ALWAYS_ON)``,
no attribute length limit, only batch or simple processors), :class:`_SpanRecorder` makes the
SDK's span without its per-span machinery; anything else, or a private name of the pinned API
and SDK missing when the middleware is built, means the SDK's own span (docs/benchmarks.md,
"Server spans without the SDK's per-span machinery").
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from time import time_ns
from typing import Any

import attrs
from aiohttp import web
from aiohttp.typedefs import Middleware
from opentelemetry import context, propagate, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SynchronousMultiSpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace import propagation as _propagation
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util import types

log = logging.getLogger(__name__)


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
    """Every request in a server span, from after routing to the final status, errors' too."""
    recorder = _SpanRecorder.of(tracer)
    start_span: Callable[..., trace.Span] = functools.partial(tracer.start_span, **_SERVER_SPAN)
    if recorder is not None:
        start_span = recorder.start_span
    extract = _extractor()
    attach, detach = context.attach, context.detach
    with_span = trace.set_span_in_context

    @web.middleware
    async def trace_request(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else None
        method = request.method
        attributes: dict[str, types.AttributeValue] = {
            "http.request.method": method,
            "url.path": request.path,
            "url.scheme": request.scheme,
        }
        if route is not None:
            attributes["http.route"] = route
        # start_span + attach: what start_as_current_span does, without its two generator-based
        # context managers per request.
        name = f"{method} {route}" if route is not None else method
        span = start_span(name, context=extract(request.headers), attributes=attributes)
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


# What every server span is; not the SDK's defaults for exceptions: the status is set here.
_SERVER_SPAN: dict[str, Any] = {
    "kind": SpanKind.SERVER,
    "record_exception": False,
    "set_status_on_exception": False,
}


def _extractor() -> Callable[[Mapping[str, str]], Context]:
    """``propagate.extract``, short-cut to an empty context when the propagator is the default
    one and neither ``traceparent`` nor ``baggage`` is present (what it would answer)."""
    extract = propagate.extract
    get_global_textmap = propagate.get_global_textmap
    checked: list[object] = [None, False]  # the propagator last seen, whether it is the default

    def extract_context(headers: Mapping[str, str]) -> Context:
        propagator = get_global_textmap()
        if propagator is not checked[0]:
            checked[:] = [propagator, _is_default_propagator(propagator)]
        if checked[1] and "traceparent" not in headers and "baggage" not in headers:
            return Context()
        return extract(headers)

    return extract_context


def _is_default_propagator(propagator: object) -> bool:
    """Whether ``propagator`` is the default one, or trace context alone."""
    parts = getattr(propagator, "_propagators", None)
    return (
        type(propagator) is CompositePropagator
        and isinstance(parts, list | tuple)
        and [type(p) for p in parts]
        in ([TraceContextTextMapPropagator, W3CBaggagePropagator], [TraceContextTextMapPropagator])
    )


def _record_status(span: trace.Span, status: int) -> None:
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR))


# -- the SDK's span, without what a server span does not use ------------------------------------


def _on_end_of(
    processor: BatchSpanProcessor | SimpleSpanProcessor,
) -> Callable[[ReadableSpan], object]:
    """``processor.on_end`` for a sampled span: the batch processor's queue's ``emit`` (what its
    ``on_end`` calls once it has checked the span is sampled), the simple one's own."""
    batch = getattr(processor, "_batch_processor", None)
    emit = getattr(batch, "emit", None)
    if type(processor) is BatchSpanProcessor and callable(emit):
        return emit  # type: ignore[no-any-return]
    return processor.on_end


_END_ONLY_PROCESSORS = (BatchSpanProcessor, SimpleSpanProcessor)
"""Span processors whose ``on_start`` and ``_on_ending`` do nothing: they see a span only as the
``ReadableSpan`` given to ``on_end``."""

# The context key of the current span: private to the API (what get_current_span reads).
_SPAN_KEY: str = getattr(_propagation, "_SPAN_KEY", "")
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_SAMPLED_RANDOM = TraceFlags(TraceFlags.SAMPLED | getattr(TraceFlags, "RANDOM_TRACE_ID", 0))

# The keywords the recorded span gives ReadableSpan and the SDK's _Span.
_SPAN_PARAMETERS = {"name", "context", "parent", "resource", "attributes", "kind"}
_SPAN_PARAMETERS |= {"instrumentation_info", "instrumentation_scope"}
_READABLE_SPAN_PARAMETERS = _SPAN_PARAMETERS | {"status", "start_time", "end_time"}
_SDK_SPAN_PARAMETERS = _SPAN_PARAMETERS | {"sampler", "span_processor", "links", "limits"}
_SDK_SPAN_PARAMETERS |= {"record_exception", "set_status_on_exception"}


def _parameters(function: object) -> set[str]:
    try:
        return set(inspect.signature(function).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return set()


def _missing_private_names(tracer: sdk_trace.Tracer) -> str | None:
    """The first private name the recorded span needs that the installed API and SDK lack."""
    processor = tracer.span_processor
    limits = getattr(tracer, "_span_limits", None)
    ids = tracer.id_generator
    sdk_span = getattr(sdk_trace, "_Span", None)
    checks = {
        "opentelemetry.trace.propagation._SPAN_KEY": bool(_SPAN_KEY),
        "TraceFlags.RANDOM_TRACE_ID": hasattr(TraceFlags, "RANDOM_TRACE_ID"),
        "SpanContext.trace_flags.random_trace_id": hasattr(TraceFlags, "random_trace_id"),
        "IdGenerator.is_trace_id_random": callable(getattr(ids, "is_trace_id_random", None)),
        "Tracer._is_enabled": callable(getattr(tracer, "_is_enabled", None)),
        "Tracer._instrumentation_scope": hasattr(tracer, "_instrumentation_scope"),
        "Tracer.instrumentation_info": hasattr(tracer, "instrumentation_info"),
        "Tracer._span_limits": hasattr(limits, "max_span_attributes")
        and hasattr(limits, "max_span_attribute_length"),
        "SynchronousMultiSpanProcessor._span_processors": isinstance(
            getattr(processor, "_span_processors", None), tuple
        ),
        "ReadableSpan()": _parameters(ReadableSpan) >= _READABLE_SPAN_PARAMETERS,
        "opentelemetry.sdk.trace._Span()": (
            _parameters(getattr(sdk_span, "__init__", None)) >= _SDK_SPAN_PARAMETERS
            and _parameters(getattr(sdk_span, "start", None)) >= {"start_time", "parent_context"}
        ),
    }
    return next((name for name, present in checks.items() if not present), None)


_fallback_logged = False


def _fall_back(reason: str) -> None:
    global _fallback_logged
    if not _fallback_logged:
        _fallback_logged = True
        log.warning(
            "server spans are the OpenTelemetry SDK's own (slower): the installed SDK does not "
            "have %s as the lean span expects",
            reason,
        )


_PLAIN_VALUE = (str, int, float, bool)
_PARENT_BASED_PARTS = ("_root", "_remote_parent_sampled", "_local_parent_sampled")
_UNSET = Status(StatusCode.UNSET)


class _SpanRecorder:
    """Starts server spans of an SDK tracer as its ``start_span`` would (see the module's text)."""

    def __init__(self, tracer: sdk_trace.Tracer, processor: SynchronousMultiSpanProcessor) -> None:
        self.tracer = tracer
        self.processor = processor
        self.checked: tuple[object, ...] | None = None
        self.max_attributes: int | None = None
        self.on_ends: tuple[Callable[[ReadableSpan], object], ...] = ()

    @classmethod
    def of(cls, tracer: trace.Tracer) -> _SpanRecorder | None:
        if not isinstance(tracer, sdk_trace.Tracer):
            return None
        sampler, processor = tracer.sampler, tracer.span_processor
        if (
            not isinstance(sampler, ParentBased)
            or any(getattr(sampler, name, None) is not ALWAYS_ON for name in _PARENT_BASED_PARTS)
            # The SDK's span metrics (OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED) count in start_span.
            or type(getattr(tracer, "_tracer_metrics", None)).__name__ != "NoOpTracerMetrics"
            or type(processor) is not SynchronousMultiSpanProcessor
        ):
            return None
        missing = _missing_private_names(tracer)
        if missing is not None:
            _fall_back(missing)
            return None
        return cls(tracer, processor)

    def _reproducible(self) -> bool:
        """Whether the tracer is still reproducible; processors may be added at any time."""
        tracer = self.tracer
        if not tracer._is_enabled():
            return False
        processors: tuple[object, ...] = self.processor._span_processors
        if processors is not self.checked:
            limits = tracer._span_limits
            self.max_attributes = limits.max_span_attributes
            ok = limits.max_span_attribute_length is None and all(
                type(p) in _END_ONLY_PROCESSORS for p in processors
            )
            self.checked = processors if ok else None
            if ok:
                self.on_ends = tuple(_on_end_of(p) for p in processors)  # type: ignore[arg-type]
            return ok
        return True

    def start_span(
        self, name: str, context: Context, attributes: dict[str, types.AttributeValue]
    ) -> trace.Span:
        """A server span, as ``tracer.start_span(..., **_SERVER_SPAN)`` would start it."""
        tracer = self.tracer
        # trace.get_current_span(context).get_span_context(), two Python calls fewer.
        current = context.get(_SPAN_KEY)
        parent = current.get_span_context() if isinstance(current, trace.Span) else None
        if (
            not self._reproducible()
            or (parent is not None and parent.is_valid and not parent.trace_flags.sampled)
            or (self.max_attributes is not None and len(attributes) > self.max_attributes)
        ):
            # What this does not reproduce (a parent that is not sampled, say): the SDK itself.
            return tracer.start_span(name, context, attributes=attributes, **_SERVER_SPAN)
        if parent is not None and not parent.is_valid:
            parent = None
        return _RecordedSpan(self, name, self._child_context(parent), parent, attributes, context)

    def _child_context(self, parent: SpanContext | None) -> SpanContext:
        """A sampled span's context as the SDK makes it."""
        ids = self.tracer.id_generator
        if parent is None:
            trace_id = ids.generate_trace_id()
            random = ids.is_trace_id_random()
            state = None
        else:
            trace_id = parent.trace_id
            random = parent.trace_flags.random_trace_id
            state = parent.trace_state
        return SpanContext(
            trace_id,
            ids.generate_span_id(),
            is_remote=False,
            trace_flags=_SAMPLED_RANDOM if random else _SAMPLED,
            trace_state=state,
        )


@attrs.define(eq=False, repr=False)
class _RecordedSpan(trace.Span):
    """A sampled span that records attributes and a status and ends as the SDK's span would;
    any other use makes it the SDK's span (:meth:`_sdk`)."""

    _recorder: _SpanRecorder
    _name: str
    _context: SpanContext
    _parent: SpanContext | None
    _attributes: dict[str, types.AttributeValue]
    _parent_context: Context
    _status: Status = attrs.field(init=False, default=_UNSET)  # Status is read-only: shared
    _start_time: int = attrs.field(init=False, factory=time_ns)
    _end_time: int | None = attrs.field(init=False, default=None)
    _sdk_span: sdk_trace.Span | None = attrs.field(init=False, default=None)

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        if self._sdk_span is not None:
            return self._sdk_span.is_recording()
        return self._end_time is None

    def set_attribute(self, key: str, value: types.AttributeValue) -> None:
        attributes = self._attributes
        limit = self._recorder.max_attributes
        if (
            self._sdk_span is None
            and self._end_time is None
            and type(key) is str
            and key
            and type(value) in _PLAIN_VALUE
            and key not in attributes
            and (limit is None or len(attributes) < limit)
        ):
            # BoundedAttributes keeps a plain value as it is without a length limit.
            attributes[key] = value
        else:
            self._sdk().set_attribute(key, value)

    def set_attributes(self, attributes: Mapping[str, types.AttributeValue]) -> None:
        self._sdk().set_attributes(attributes)

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if (
            self._sdk_span is None
            and self._end_time is None
            and isinstance(status, Status)
            and description is None
        ):
            # The SDK's rule: an OK status stays, an UNSET one changes nothing.
            if self._status.status_code is not StatusCode.OK and (
                status.status_code is not StatusCode.UNSET
            ):
                self._status = status
        else:
            self._sdk().set_status(status, description)

    def end(self, end_time: int | None = None) -> None:
        if self._sdk_span is not None:
            self._sdk_span.end(end_time)
            return
        if self._end_time is not None:
            log.warning("Calling end() on an ended span.")
            return
        self._end_time = end_time if end_time is not None else time_ns()
        recorder = self._recorder
        tracer = recorder.tracer
        readable = ReadableSpan(
            name=self._name,
            context=self._context,
            parent=self._parent,
            resource=tracer.resource,
            attributes=self._attributes,
            kind=SpanKind.SERVER,
            status=self._status,
            start_time=self._start_time,
            end_time=self._end_time,
            instrumentation_info=tracer.instrumentation_info,
            instrumentation_scope=tracer._instrumentation_scope,
        )
        processor = recorder.processor
        if processor._span_processors is recorder.checked:
            # No processor added since the check: their on_end for a sampled span, directly.
            for on_end in recorder.on_ends:
                on_end(readable)
        else:
            processor.on_end(readable)

    def add_event(
        self, name: str, attributes: types.Attributes = None, timestamp: int | None = None
    ) -> None:
        self._sdk().add_event(name, attributes, timestamp)

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        self._sdk().add_link(context, attributes)

    def update_name(self, name: str) -> None:
        if self._sdk_span is None and self._end_time is None:
            self._name = name  # as the SDK's span (its processors see it at the end)
        else:
            self._sdk().update_name(name)

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        self._sdk().record_exception(exception, attributes, timestamp, escaped)

    def _sdk(self) -> sdk_trace.Span:
        """The SDK's span with this one's state; from now on it records everything."""
        if self._sdk_span is None:
            tracer = self._recorder.tracer
            span = sdk_trace._Span(
                name=self._name,
                context=self._context,
                parent=self._parent,
                sampler=tracer.sampler,
                resource=tracer.resource,
                attributes=self._attributes,
                span_processor=self._recorder.processor,
                kind=SpanKind.SERVER,
                links=(),
                instrumentation_info=tracer.instrumentation_info,
                record_exception=False,
                set_status_on_exception=False,
                limits=tracer._span_limits,
                instrumentation_scope=tracer._instrumentation_scope,
            )
            # start() gives the processors on_start (a no-op for the ones allowed here).
            span.start(start_time=self._start_time, parent_context=self._parent_context)
            if self._status.status_code is not StatusCode.UNSET:
                span.set_status(self._status)
            if self._end_time is not None:
                span._end_time = self._end_time
            self._sdk_span = span
        return self._sdk_span

    def __repr__(self) -> str:
        return f'_RecordedSpan(name="{self._name}", context={self._context})'
