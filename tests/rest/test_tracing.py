"""Tracing: one server span per request, W3C traceparent, no secrets recorded."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextvars import Token
from typing import Any

import attrs
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient
from multidict import CIMultiDict, CIMultiDictProxy
from opentelemetry import baggage, propagate
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.context import Context
from opentelemetry.context.contextvars_context import ContextVarsRuntimeContext
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    StaticSampler,
)
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from authgate.entrypoints.app import serving as serve_config
from authgate.entrypoints.app.config import parse
from authgate.entrypoints.rest import (
    Api,
    Call,
    cookie,
    path,
    pattern,
    query,
    tracing,
)
from authgate.entrypoints.rest.tracing import (
    _extractor,
    _RecordedSpan,
    _SpanRecorder,
    make_tracer_provider,
    tracing_middleware,
)

from .conftest import Serve

Client = TestClient[web.Request, web.Application]

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@attrs.frozen
class User:
    id: str


@pytest.fixture(autouse=True, params=["checked", "check-failed"])
def private_names(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here twice: with the start-up check of the private names the lean span uses
    as it finds the installed API and SDK, and with that check forced to fail (the SDK's own
    span for every request): the same spans exported, the same answers."""
    outcome: str = request.param
    if outcome == "check-failed":
        monkeypatch.setattr(tracing, "_missing_private_names", lambda tracer: "a forced mismatch")
        monkeypatch.setattr(tracing, "_fallback_logged", False)
    return outcome


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.shutdown()


WIRINGS = ("api", "middleware", "with-middleware")
"""The ways a traced application is built:

* api: ``Api.app(tracer=...)``, as the service does: the tracing middleware outermost;
* middleware: :func:`tracing_middleware` given as a middleware;
* with-middleware: ``Api.app(tracer=..., middlewares=[another])``: the tracing middleware
  outermost, then the other."""


@web.middleware
async def passing_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    return await handler(request)


async def serve_traced(
    serve: Serve, api: Api, tracer: otel_trace.Tracer, wiring: str, monkeypatch: pytest.MonkeyPatch
) -> Client:
    if wiring == "middleware":
        return await serve(api, middlewares=[tracing_middleware(tracer)])
    if wiring == "with-middleware":
        client = await serve(api, middlewares=[passing_middleware], tracer=tracer)
        assert len(client.app.middlewares) == 3
        assert client.app.middlewares[1] is passing_middleware
        return client
    client = await serve(api, tracer=tracer)
    assert len(client.app.middlewares) == 2  # the span, then the error handling
    return client


@pytest.fixture(params=WIRINGS)
def wiring(request: pytest.FixtureRequest) -> str:
    wiring: str = request.param
    return wiring


async def traced_client(
    serve: Serve, exporter: InMemorySpanExporter, wiring: str, monkeypatch: pytest.MonkeyPatch
) -> Client:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/users/{id}", params=[query("q"), cookie("session")], response=User)
    async def get_user(call: Call[None]) -> User:
        if call.path["id"] == "0":
            raise RuntimeError("boom")
        return User(call.path["id"])

    return await serve_traced(serve, api, provider.get_tracer("test"), wiring, monkeypatch)


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = exporter.get_finished_spans()
    assert len(spans) == 1, spans
    return spans[0]


async def test_one_server_span_named_by_the_route_template(
    serve: Serve, exporter: InMemorySpanExporter, wiring: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await traced_client(serve, exporter, wiring, monkeypatch)
    resp = await client.get("/users/42")
    assert resp.status == 200
    span = only_span(exporter)
    assert span.name == "GET /users/{id}"
    assert span.kind is SpanKind.SERVER
    assert span.attributes is not None
    assert span.attributes["http.route"] == "/users/{id}"
    assert span.attributes["http.response.status_code"] == 200
    assert span.attributes["http.request.method"] == "GET"
    assert span.parent is None
    assert span.status.status_code is StatusCode.UNSET


async def test_each_request_gets_its_own_span(
    serve: Serve, exporter: InMemorySpanExporter, wiring: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await traced_client(serve, exporter, wiring, monkeypatch)
    for i in range(3):
        assert (await client.get(f"/users/{i + 1}")).status == 200
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["GET /users/{id}"] * 3
    assert len({s.context.trace_id for s in spans}) == 3


async def test_traceparent_makes_the_span_a_child(
    serve: Serve, exporter: InMemorySpanExporter, wiring: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await traced_client(serve, exporter, wiring, monkeypatch)
    resp = await client.get("/users/42", headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"})
    assert resp.status == 200
    span = only_span(exporter)
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None
    assert f"{span.parent.span_id:016x}" == PARENT_ID
    assert span.parent.is_remote


async def test_status_of_errors_is_recorded(
    serve: Serve, exporter: InMemorySpanExporter, wiring: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await traced_client(serve, exporter, wiring, monkeypatch)
    assert (await client.get("/users/0")).status == 500
    assert (await client.get("/nowhere")).status == 404
    failed, missing = exporter.get_finished_spans()
    assert failed.attributes is not None and missing.attributes is not None
    assert failed.name == "GET /users/{id}"
    assert failed.attributes["http.response.status_code"] == 500
    assert failed.status.status_code is StatusCode.ERROR
    assert missing.attributes["http.response.status_code"] == 404
    assert "http.route" not in missing.attributes
    assert missing.status.status_code is StatusCode.UNSET


async def test_query_string_and_credentials_are_never_recorded(
    serve: Serve, exporter: InMemorySpanExporter, wiring: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await traced_client(serve, exporter, wiring, monkeypatch)
    secrets = ("querysecret", "bearersecret", "cookiesecret", "apikeysecret")
    resp = await client.get(
        "/users/42?q=querysecret&code=querysecret",
        headers={
            "Authorization": "Bearer bearersecret",
            "Cookie": "session=cookiesecret",
            "X-API-Key": "apikeysecret",
        },
    )
    assert resp.status == 200
    span = only_span(exporter)
    assert span.attributes is not None
    recorded = repr(dict(span.attributes)) + span.name + repr(span.events)
    for secret in secrets:
        assert secret not in recorded
    assert "?" not in recorded
    assert span.attributes["url.path"] == "/users/42"


def config_text(disabled: bool) -> str:
    return yaml.safe_dump(
        {
            "rest": {"port": 8080},
            "otel": {"service": {"name": "authgate-test"}, "sdk": {"disabled": disabled}},
        }
    )


def test_sdk_disabled_installs_no_tracing_middleware() -> None:
    app = serve_config.build_app(Api("Example", "1.0.0"), parse(config_text(True)))
    assert len(app.middlewares) == 1  # the error handling alone


async def test_sdk_enabled_traces_in_one_outermost_middleware(
    aiohttp_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The service's own wiring (build_app, as `authgate serve` and create_app call it).
    # build_app sets the global provider; keep this test from leaking it into others.
    installed: list[TracerProvider] = []
    monkeypatch.setattr(otel_trace, "set_tracer_provider", installed.append)
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/users/{id}", response=User)
    async def get_user(call: Call[None]) -> User:
        return User(call.path["id"])

    app = serve_config.build_app(api, parse(config_text(False)))
    (provider,) = installed
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        client: Client = await aiohttp_client(app)
        assert (await client.get("/users/42")).status == 200
    finally:
        provider.shutdown()
    assert type(app) is web.Application
    assert len(app.middlewares) == 2
    span = only_span(exporter)
    assert span.name == "GET /users/{id}"
    assert span.kind is SpanKind.SERVER
    assert span.attributes == {
        "http.request.method": "GET",
        "url.path": "/users/42",
        "url.scheme": "http",
        "http.route": "/users/{id}",
        "http.response.status_code": 200,
    }


async def test_otlp_export_when_the_standard_variables_are_set(
    aiohttp_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    received: list[tuple[str, str]] = []

    async def collect(request: web.Request) -> web.Response:
        await request.read()
        received.append((request.path, request.content_type))
        return web.Response(status=200)

    collector = web.Application()
    collector.router.add_post("/v1/traces", collect)
    otlp = await aiohttp_server(collector)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", str(otlp.make_url("/")).rstrip("/"))
    provider = make_tracer_provider("authgate-test")
    with provider.get_tracer("test").start_as_current_span("exported"):
        pass
    # The exporter posts synchronously from the flush; let the collector run meanwhile.
    flushed = await asyncio.to_thread(provider.force_flush, 5000)
    provider.shutdown()
    assert flushed
    assert received == [("/v1/traces", "application/x-protobuf")]


# -- the recorded span: what the SDK's span would export, at a fraction of its cost -------------


class CountingIds(IdGenerator):
    """Deterministic ids, so that two providers given the same requests make the same spans."""

    def __init__(self) -> None:
        self.n = 0

    def generate_span_id(self) -> int:
        self.n += 1
        return self.n

    def generate_trace_id(self) -> int:
        self.n += 1
        return self.n << 64 | self.n


async def exported_by(
    serve: Serve,
    sampler: Sampler,
    limits: SpanLimits | None = None,
    *,
    wiring: str = "middleware",
    monkeypatch: pytest.MonkeyPatch,
) -> ExportTraceServiceRequest:
    """The OTLP request of the spans of a fixed sequence of requests, times zeroed."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        sampler=sampler,
        resource=Resource.create({SERVICE_NAME: "authgate-test"}),
        id_generator=CountingIds(),
        span_limits=limits,
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("authgate")
    api = Api("Example", "1.0.0")

    @api.operation(
        "GET", "/users/{id}", params=[path("id", pattern(r"^\d+$")), query("note")], response=User
    )
    async def get_user(call: Call[None]) -> User:
        if call.path["id"] == "0":
            raise RuntimeError("boom")
        note = call.query.get("note")
        if note and note[0] == "child":
            # A span of the handler's own: a child of the server span.
            with tracer.start_as_current_span("child"):
                pass
        elif note:
            # A handler's own use of the server span: an attribute, an event, a status.
            span = otel_trace.get_current_span()
            span.set_attribute("app.note", note[0])
            span.add_event("looked up", {"app.count": 2})
            span.set_status(Status(StatusCode.OK))
        return User(call.path["id"])

    client = await serve_traced(serve, api, tracer, wiring, monkeypatch)
    for method, target, headers, status in REQUESTS:
        resp = await client.request(method, target, headers=headers)
        await resp.read()
        assert resp.status == status, (method, target)
    spans = exporter.get_finished_spans()
    request = encode_spans(spans)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                span.start_time_unix_nano = span.end_time_unix_nano = 0
                for event in span.events:
                    event.time_unix_nano = 0
    return request


SAMPLED = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01", "tracestate": "vendor=value"}
REQUESTS: tuple[tuple[str, str, dict[str, str], int], ...] = (
    ("GET", "/users/42?note=secret", {}, 200),
    ("GET", "/users/42", {}, 200),
    ("GET", "/users/42", SAMPLED, 200),
    ("GET", "/users/42", {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-00"}, 200),
    ("GET", "/users/0", {}, 500),  # the operation raises: the generic JSON 500
    ("GET", "/nowhere", {}, 404),
    ("GET", "/users/7?note=hello", SAMPLED, 200),
    ("GET", "/users/x7", {}, 400),  # the path parameter's pattern
    ("POST", "/users/42", {}, 405),
    ("GET", "/users/42?note=child", {}, 200),
    ("GET", "/users/42", {"Baggage": "app.key=value", "TraceParent": SAMPLED["traceparent"]}, 200),
    ("GET", "/users/42", {"baggage": "app.key=value"}, 200),
    ("GET", "/users/42", {"traceparent": "not-a-traceparent", "tracestate": "a=b"}, 200),
)
"""The requests :func:`exported_by` makes (method, target, headers) and their statuses."""


SDK_ALWAYS_ON = ParentBased(StaticSampler(Decision.RECORD_AND_SAMPLE))
"""The default sampler's decisions from other objects: every span through the SDK's start_span."""


@pytest.mark.parametrize(
    "limits",
    [
        None,
        # Limits the recorded path does not apply itself: the SDK's span takes over.
        SpanLimits(max_span_attributes=3),
        SpanLimits(max_span_attribute_length=4),
    ],
)
async def test_spans_export_the_same_under_limits(
    serve: Serve, limits: SpanLimits | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = await exported_by(serve, ParentBased(ALWAYS_ON), limits, monkeypatch=monkeypatch)
    assert recorded == await exported_by(serve, SDK_ALWAYS_ON, limits, monkeypatch=monkeypatch)
    spans = recorded.resource_spans[0].scope_spans[0].spans
    if limits is not None and limits.max_span_attributes == 3:
        assert {len(s.attributes) for s in spans if s.name != "child"} == {3}
    if limits is not None and limits.max_span_attribute_length == 4:
        assert {a.value.string_value for a in spans[0].attributes} >= {"/use", "http"}


async def test_recorded_spans_export_what_the_sdk_spans_would(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default sampler takes the recorded path; an equal ParentBased sampler whose root is
    # not the SDK's ALWAYS_ON object makes every span through the SDK's own start_span.
    recorded = await exported_by(serve, ParentBased(ALWAYS_ON), monkeypatch=monkeypatch)
    assert recorded == await exported_by(serve, SDK_ALWAYS_ON, monkeypatch=monkeypatch)
    (scope_spans,) = recorded.resource_spans[0].scope_spans
    assert scope_spans.scope.name == "authgate"
    # The request whose parent is not sampled is not recorded, as the SDK decides.
    names = [s.name for s in scope_spans.spans]
    route = "GET /users/{id}"
    assert names == [route] * 4 + ["GET", route, route, "POST", "child"] + [route] * 4
    annotated = scope_spans.spans[5]
    assert {a.key for a in annotated.attributes} >= {"app.note", "http.response.status_code"}
    assert [e.name for e in annotated.events] == ["looked up"]
    assert annotated.trace_state == "vendor=value"


@pytest.mark.parametrize("wiring", [w for w in WIRINGS if w != "middleware"])
@pytest.mark.parametrize(
    ("sampler", "limits"),
    [
        (ParentBased(ALWAYS_ON), None),  # the recorded span
        (SDK_ALWAYS_ON, None),  # the SDK's span
        (ParentBased(ALWAYS_ON), SpanLimits(max_span_attributes=3)),
        (SDK_ALWAYS_ON, SpanLimits(max_span_attributes=3)),
    ],
    ids=["recorded", "sdk", "recorded-limited", "sdk-limited"],
)
async def test_every_wiring_exports_the_spans_of_the_tracing_middleware(
    serve: Serve,
    monkeypatch: pytest.MonkeyPatch,
    wiring: str,
    sampler: Sampler,
    limits: SpanLimits | None,
) -> None:
    # Byte for byte the OTLP export of the tracing middleware alone: names, ids, parents,
    # kinds, attributes in their order, statuses, events, for every kind of answer.
    before = await exported_by(serve, sampler, limits, monkeypatch=monkeypatch)
    now = await exported_by(serve, sampler, limits, wiring=wiring, monkeypatch=monkeypatch)
    assert now == before


async def test_spans_of_the_service_s_wiring(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    exported = await exported_by(
        serve, ParentBased(ALWAYS_ON), wiring="api", monkeypatch=monkeypatch
    )
    spans = exported.resource_spans[0].scope_spans[0].spans
    server_kind = 2  # SPAN_KIND_SERVER in OTLP
    seen = []
    for span in spans:
        attributes = {a.key: a.value for a in span.attributes}
        status = attributes.get("http.response.status_code")
        route = attributes.get("http.route")
        seen.append(
            (
                span.name,
                route.string_value if route is not None else None,
                status.int_value if status is not None else None,
                span.status.code,
            )
        )
        if span.name != "child":
            assert span.kind == server_kind
            assert [a.key for a in span.attributes][:3] == [
                "http.request.method",
                "url.path",
                "url.scheme",
            ]
    error, unset, ok = 2, 0, 1  # STATUS_CODE_* in OTLP
    route = "/users/{id}"
    get = f"GET {route}"
    assert seen == [
        (get, route, 200, ok),
        (get, route, 200, unset),
        (get, route, 200, unset),
        (get, route, 500, error),  # the operation raised: the JSON 500
        ("GET", None, 404, unset),  # no route matched
        (get, route, 200, ok),
        (get, route, 400, unset),  # the path parameter's pattern
        ("POST", None, 405, unset),  # aiohttp's router: no route of that method
        ("child", None, None, unset),
        (get, route, 200, unset),
        (get, route, 200, unset),
        (get, route, 200, unset),
        (get, route, 200, unset),
    ]
    # The caller's traceparent honoured (and its tracestate kept), whatever its case.
    for index in (2, 5, 10):
        assert spans[index].trace_id.hex() == TRACE_ID
        assert spans[index].parent_span_id.hex() == PARENT_ID
    assert spans[5].trace_state == "vendor=value"
    # A span the handler starts is a child of the server span (current while it runs).
    child, parent = spans[8], spans[9]
    assert child.parent_span_id == parent.span_id
    assert child.trace_id == parent.trace_id
    assert parent.parent_span_id == b""
    # Without a (valid) traceparent, a trace of its own.
    assert spans[12].parent_span_id == b"" and spans[11].parent_span_id == b""


def test_the_service_tracer_takes_the_recorded_path_when_the_check_passes(
    private_names: str,
) -> None:
    provider = make_tracer_provider("authgate-test", exporter=InMemorySpanExporter())
    try:
        recorder = _SpanRecorder.of(provider.get_tracer("authgate"))
        assert (recorder is not None) == (private_names == "checked")
        assert _SpanRecorder.of(otel_trace.NoOpTracer()) is None
    finally:
        provider.shutdown()


@pytest.mark.parametrize("private_names", ["checked"], indirect=True)
def test_the_installed_sdk_has_every_private_name_the_lean_span_uses() -> None:
    # Should an upgrade within the pinned minor versions change one, this says which.
    provider = TracerProvider()
    assert tracing._missing_private_names(provider.get_tracer("authgate")) is None


@pytest.mark.parametrize("private_names", ["checked"], indirect=True)
async def test_a_missing_private_name_means_the_sdk_span_logged_once(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # As an API release without the context key the lean span reads would be: found when the
    # application is built, not by a request.
    monkeypatch.setattr(tracing, "_SPAN_KEY", "")
    monkeypatch.setattr(tracing, "_fallback_logged", False)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    api = Api("Example", "1.0.0")
    kinds: list[type] = []

    @api.operation("GET", "/users/{id}", response=User)
    async def get_user(call: Call[None]) -> User:
        kinds.append(type(otel_trace.get_current_span()))
        return User(call.path["id"])

    with caplog.at_level("WARNING", logger=tracing.__name__):
        clients = [await serve(api, tracer=provider.get_tracer("test")) for _ in range(2)]
        for client in clients:
            assert (await client.get("/users/42")).status == 200
    warnings = [r.getMessage() for r in caplog.records if r.name == tracing.__name__]
    assert len(warnings) == 1
    assert "_SPAN_KEY" in warnings[0]
    assert kinds and not any(issubclass(k, _RecordedSpan) for k in kinds)
    assert [s.name for s in exporter.get_finished_spans()] == ["GET /users/{id}"] * 2


# -- the caller's context: propagate.extract, without asking the propagator when it is known --


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Accept": "application/json"},
        {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
        {"TraceParent": f"00-{TRACE_ID}-{PARENT_ID}-01", "TraceState": "a=b"},
        {"traceparent": ""},
        {"traceparent": "garbage"},
        {"tracestate": "a=b"},
        {"baggage": "k=v"},
        {"BAGGAGE": "k=v,l=w"},
    ],
)
def test_the_extracted_context_is_what_propagate_extracts(headers: dict[str, str]) -> None:
    carrier = CIMultiDictProxy(CIMultiDict(headers))
    extracted, expected = _extractor()(carrier), propagate.extract(carrier)
    assert type(extracted) is Context
    # Equal contexts (their span objects compared by their span contexts).
    assert extracted.keys() == expected.keys()
    assert otel_trace.get_current_span(extracted).get_span_context() == (
        otel_trace.get_current_span(expected).get_span_context()
    )
    assert baggage.get_all(extracted) == baggage.get_all(expected)
    if not extracted:  # the known answer: an empty context, as the propagator's own
        assert expected == Context()


class HeaderPropagator(TraceContextTextMapPropagator):
    """W3C trace context read from another header: a propagator that is not the default."""

    _TRACEPARENT_HEADER_NAME = "x-parent"


@pytest.mark.parametrize("wiring", ["api", "middleware"])
async def test_another_global_propagator_is_asked(
    serve: Serve, exporter: InMemorySpanExporter, wiring: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await traced_client(serve, exporter, wiring, monkeypatch)
    monkeypatch.setattr(propagate, "_HTTP_TEXT_FORMAT", propagate.get_global_textmap())
    # Set after the application was built: the propagator is looked up per request.
    propagate.set_global_textmap(CompositePropagator([HeaderPropagator()]))
    resp = await client.get("/users/42", headers={"X-Parent": f"00-{TRACE_ID}-{PARENT_ID}-01"})
    assert resp.status == 200
    span = only_span(exporter)
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT_ID


async def test_the_api_hooks_run_inside_the_server_span(
    aiohttp_client: Any, exporter: InMemorySpanExporter
) -> None:
    # What create_app does with the service's application (session renewal, request metrics):
    # traced, the hooks run in the error handling, inside the server span.
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/users/{id}", response=User)
    async def get_user(call: Call[None]) -> User:
        if call.path["id"] == "0":
            raise RuntimeError("boom")
        return User(call.path["id"])

    recorded: list[tuple[str, str | None, int]] = []
    current: list[int] = []

    @api.after_response
    def after(request: web.Request, response: web.StreamResponse) -> None:
        current.append(otel_trace.get_current_span().get_span_context().span_id)

    @api.record_requests
    def record(method: str, route: str | None, status: int, seconds: float) -> None:
        recorded.append((method, route, status))

    app = api.app(tracer=provider.get_tracer("test"))
    client: Client = await aiohttp_client(app)
    assert (await client.get("/users/42")).status == 200
    assert (await client.get("/users/0")).status == 500
    assert (await client.get("/nowhere")).status == 404
    assert recorded == [
        ("GET", "/users/{id}", 200),
        ("GET", "/users/{id}", 500),
        ("GET", None, 404),
    ]
    ok, failed, missing = exporter.get_finished_spans()
    assert current == [ok.context.span_id]
    assert [s.name for s in (ok, failed, missing)] == ["GET /users/{id}", "GET /users/{id}", "GET"]
    assert failed.status.status_code is StatusCode.ERROR


class OtherRuntimeContext(ContextVarsRuntimeContext):
    """A runtime context that is not OpenTelemetry's own (as OTEL_PYTHON_CONTEXT may name)."""

    def __init__(self) -> None:
        super().__init__()
        self.attached: list[int] = []  # the span ids of the contexts attached

    def attach(self, context: Context) -> Token[Context]:
        self.attached.append(otel_trace.get_current_span(context).get_span_context().span_id)
        return super().attach(context)


@pytest.mark.parametrize("runtime", ["own", "other"])
async def test_the_span_is_current_while_the_handler_runs_and_only_then(
    serve: Serve, exporter: InMemorySpanExporter, runtime: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Made current by the runtime context's attach and detach, whichever it is.
    other = OtherRuntimeContext()
    if runtime == "other":
        monkeypatch.setattr(otel_context, "_RUNTIME_CONTEXT", other)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    api = Api("Example", "1.0.0")
    seen: list[tuple[int, int]] = []

    @api.operation("GET", "/users/{id}", response=User)
    async def get_user(call: Call[None]) -> User:
        with tracer.start_as_current_span("child") as child:
            seen.append((child.parent.span_id if child.parent else 0, 0))
        seen.append((otel_trace.get_current_span().get_span_context().span_id, 1))
        return User(call.path["id"])

    client = await serve(api, tracer=tracer)
    before = otel_context.get_current()
    assert (await client.get("/users/1")).status == 200
    assert (await client.get("/users/2")).status == 200
    assert otel_context.get_current() == before
    child1, server1, child2, server2 = exporter.get_finished_spans()
    assert seen == [
        (server1.context.span_id, 0),
        (server1.context.span_id, 1),
        (server2.context.span_id, 0),
        (server2.context.span_id, 1),
    ]
    assert child1.parent == server1.context and child2.parent == server2.context
    attached = {server1.context.span_id, server2.context.span_id} & set(other.attached)
    assert len(attached) == (2 if runtime == "other" else 0)


def path_of(span: ReadableSpan) -> object:
    return (span.attributes or {}).get("url.path")


@pytest.mark.parametrize("wiring", ["api", "middleware"])
async def test_batch_and_later_processors_get_every_span(
    serve: Serve, wiring: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The service's processor (a batch one) gets the spans through its queue; a processor
    # added while the application serves gets the spans that end from then on.
    batched, later = InMemorySpanExporter(), InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(batched))
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/users/{id}", response=User)
    async def get_user(call: Call[None]) -> User:
        if call.path["id"] == "2":
            provider.add_span_processor(SimpleSpanProcessor(later))
        return User(call.path["id"])

    client = await serve_traced(serve, api, provider.get_tracer("test"), wiring, monkeypatch)
    try:
        for i in (1, 2, 3):
            assert (await client.get(f"/users/{i}")).status == 200
        assert await asyncio.to_thread(provider.force_flush, 5000)
    finally:
        provider.shutdown()
    assert [path_of(s) for s in batched.get_finished_spans()] == [
        "/users/1",
        "/users/2",
        "/users/3",
    ]
    # The span of the request that added it ended after: it has it too.
    assert [path_of(s) for s in later.get_finished_spans()] == [
        "/users/2",
        "/users/3",
    ]
