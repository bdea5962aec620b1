"""Tracing: one server span per request, W3C traceparent, no secrets recorded (issue 2, item 9)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient
from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
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

from authgate.entrypoints import server
from authgate.entrypoints.config import parse
from authgate.entrypoints.rest import Api, Call, cookie, query
from authgate.entrypoints.rest.application import FAST_PATH
from authgate.entrypoints.rest.errors import error_middleware
from authgate.entrypoints.rest.tracing import (
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


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.shutdown()


async def traced_client(serve: Serve, exporter: InMemorySpanExporter) -> Client:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/users/{id}", params=[query("q"), cookie("session")], response=User)
    async def get_user(call: Call[None]) -> User:
        if call.path["id"] == "0":
            raise RuntimeError("boom")
        return User(call.path["id"])

    return await serve(api, middlewares=[tracing_middleware(provider.get_tracer("test"))])


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = exporter.get_finished_spans()
    assert len(spans) == 1, spans
    return spans[0]


async def test_one_server_span_named_by_the_route_template(
    serve: Serve, exporter: InMemorySpanExporter
) -> None:
    client = await traced_client(serve, exporter)
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


async def test_each_request_gets_its_own_span(serve: Serve, exporter: InMemorySpanExporter) -> None:
    client = await traced_client(serve, exporter)
    for i in range(3):
        assert (await client.get(f"/users/{i + 1}")).status == 200
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["GET /users/{id}"] * 3
    assert len({s.context.trace_id for s in spans}) == 3


async def test_traceparent_makes_the_span_a_child(
    serve: Serve, exporter: InMemorySpanExporter
) -> None:
    client = await traced_client(serve, exporter)
    resp = await client.get("/users/42", headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"})
    assert resp.status == 200
    span = only_span(exporter)
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None
    assert f"{span.parent.span_id:016x}" == PARENT_ID
    assert span.parent.is_remote


async def test_status_of_errors_is_recorded(serve: Serve, exporter: InMemorySpanExporter) -> None:
    client = await traced_client(serve, exporter)
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
    serve: Serve, exporter: InMemorySpanExporter
) -> None:
    client = await traced_client(serve, exporter)
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
    app = server.build_app(Api("Example", "1.0.0"), parse(config_text(True)))
    # No middleware at all: the error handling is the application's own (rest.application).
    assert list(app.middlewares) == ([] if FAST_PATH else [error_middleware])


async def test_sdk_enabled_installs_the_tracing_middleware(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    # build_app sets the global provider; keep this test from leaking it into others.
    installed: list[object] = []
    monkeypatch.setattr(otel_trace, "set_tracer_provider", installed.append)
    app = server.build_app(Api("Example", "1.0.0"), parse(config_text(False)))
    assert len(app.middlewares) == 2
    assert app.middlewares[-1] is error_middleware
    assert len(installed) == 1


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
    serve: Serve, sampler: Sampler, limits: SpanLimits | None = None
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
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/users/{id}", params=[query("note")], response=User)
    async def get_user(call: Call[None]) -> User:
        if call.path["id"] == "0":
            raise RuntimeError("boom")
        if call.query.get("note"):
            # A handler's own use of the server span: an attribute, an event, a status.
            span = otel_trace.get_current_span()
            span.set_attribute("app.note", call.query["note"][0])
            span.add_event("looked up", {"app.count": 2})
            span.set_status(Status(StatusCode.OK))
        return User(call.path["id"])

    client = await serve(api, middlewares=[tracing_middleware(provider.get_tracer("authgate"))])
    sampled = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01", "tracestate": "vendor=value"}
    not_sampled = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-00"}
    for path, headers in (
        ("/users/42?note=secret", {}),
        ("/users/42", {}),
        ("/users/42", sampled),
        ("/users/42", not_sampled),
        ("/users/0", {}),
        ("/nowhere", {}),
        ("/users/7?note=hello", sampled),
    ):
        await (await client.get(path, headers=headers)).read()
    spans = exporter.get_finished_spans()
    request = encode_spans(spans)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                span.start_time_unix_nano = span.end_time_unix_nano = 0
                for event in span.events:
                    event.time_unix_nano = 0
    return request


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
async def test_spans_export_the_same_under_limits(serve: Serve, limits: SpanLimits | None) -> None:
    recorded = await exported_by(serve, ParentBased(ALWAYS_ON), limits)
    assert recorded == await exported_by(serve, SDK_ALWAYS_ON, limits)
    spans = recorded.resource_spans[0].scope_spans[0].spans
    if limits is not None and limits.max_span_attributes == 3:
        assert {len(s.attributes) for s in spans} == {3}
    if limits is not None and limits.max_span_attribute_length == 4:
        assert {a.value.string_value for a in spans[0].attributes} >= {"/use", "http"}


async def test_recorded_spans_export_what_the_sdk_spans_would(serve: Serve) -> None:
    # The default sampler takes the recorded path; an equal ParentBased sampler whose root is
    # not the SDK's ALWAYS_ON object makes every span through the SDK's own start_span.
    recorded = await exported_by(serve, ParentBased(ALWAYS_ON))
    assert recorded == await exported_by(serve, SDK_ALWAYS_ON)
    (scope_spans,) = recorded.resource_spans[0].scope_spans
    assert scope_spans.scope.name == "authgate"
    # Six spans: the request whose parent is not sampled is not recorded, as the SDK decides.
    names = [s.name for s in scope_spans.spans]
    assert names == ["GET /users/{id}"] * 4 + ["GET", "GET /users/{id}"]
    annotated = scope_spans.spans[-1]
    assert {a.key for a in annotated.attributes} >= {"app.note", "http.response.status_code"}
    assert [e.name for e in annotated.events] == ["looked up"]
    assert annotated.trace_state == "vendor=value"


def test_the_service_tracer_takes_the_recorded_path() -> None:
    provider = make_tracer_provider("authgate-test", exporter=InMemorySpanExporter())
    try:
        assert _SpanRecorder.of(provider.get_tracer("authgate")) is not None
        assert _SpanRecorder.of(otel_trace.NoOpTracer()) is None
    finally:
        provider.shutdown()
