"""Unknown paths, wrong methods and failing operations answer JSON."""

from __future__ import annotations

import logging

import pytest
from aiohttp import web
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from authgate.entrypoints.rest import Api, Call, HttpError
from authgate.entrypoints.rest.tracing import tracing_middleware

from .conftest import Serve

GENERIC_500 = {"error": "internal_error", "message": "An unexpected error occurred."}


def failing_api() -> Api:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/boom/{id}")
    async def boom(call: Call[None]) -> None:
        raise RuntimeError("secret detail: db password is hunter2")

    @api.operation("GET", "/teapot")
    async def teapot(call: Call[None]) -> None:
        raise HttpError(418, {"error": "teapot", "message": "short and stout"}, {"X-Tea": "1"})

    return api


async def test_unknown_path_is_404_json(serve: Serve) -> None:
    client = await serve(failing_api())
    resp = await client.get("/nowhere")
    assert resp.status == 404
    assert resp.content_type == "application/json"
    assert await resp.json() == {"error": "not_found", "message": "no such resource"}


async def test_wrong_method_is_405_json_with_allow(serve: Serve) -> None:
    client = await serve(failing_api())
    resp = await client.post("/boom/1")
    assert resp.status == 405
    assert resp.content_type == "application/json"
    assert resp.headers["Allow"] == "GET"
    assert await resp.json() == {
        "error": "method_not_allowed",
        "message": "method not allowed on this resource",
    }
    resp = await client.delete("/openapi.json")
    assert resp.status == 405
    assert set(resp.headers["Allow"].split(",")) == {"GET", "HEAD"}


async def test_exception_is_500_generic_with_detail_in_the_log(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    client = await serve(failing_api())
    with caplog.at_level(logging.ERROR, logger="authgate.rest"):
        resp = await client.get("/boom/7?token=abc")
    assert resp.status == 500
    assert resp.content_type == "application/json"
    text = await resp.text()
    assert await resp.json() == GENERIC_500
    assert "hunter2" not in text
    assert "RuntimeError" not in text
    errors = [r for r in caplog.records if r.name == "authgate.rest"]
    assert len(errors) == 1
    record = errors[0]
    assert record.levelno == logging.ERROR
    assert "GET /boom/7" in record.getMessage()
    assert "token=abc" not in record.getMessage()  # never the query string
    assert "trace_id" not in record.getMessage()  # no tracing: no trace id
    assert record.exc_info is not None
    assert "hunter2" in str(record.exc_info[1])


@pytest.mark.parametrize("folded", [True, False], ids=["folded", "middleware"])
async def test_trace_id_of_a_500_goes_to_the_log_not_the_body(
    serve: Serve, caplog: pytest.LogCaptureFixture, folded: bool
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    if folded:  # the span in the application's own dispatch, as `authgate serve` has it
        client = await serve(failing_api(), tracer=tracer)
    else:
        client = await serve(failing_api(), middlewares=[tracing_middleware(tracer)])
    with caplog.at_level(logging.ERROR, logger="authgate.rest"):
        resp = await client.get("/boom/7")
    assert resp.status == 500
    assert await resp.json() == GENERIC_500
    (span,) = exporter.get_finished_spans()
    trace_id = f"{span.context.trace_id:032x}"
    (record,) = [r for r in caplog.records if r.name == "authgate.rest"]
    assert f"trace_id={trace_id}" in record.getMessage()
    assert trace_id not in await resp.text()
    assert trace_id not in str(dict(resp.headers))


async def test_http_error_from_an_operation_is_answered_as_is(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    client = await serve(failing_api())
    with caplog.at_level(logging.INFO, logger="authgate"):
        resp = await client.get("/teapot")
    assert resp.status == 418
    assert resp.headers["X-Tea"] == "1"
    assert await resp.json() == {"error": "teapot", "message": "short and stout"}
    # An expected outcome, not a failure: nothing logged as an error.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_raised_aiohttp_error_keeps_its_headers_and_answers_json(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/limited")
    async def limited(call: Call[None]) -> None:
        raise web.HTTPTooManyRequests(headers={"Retry-After": "30"}, text="slow down")

    client = await serve(api)
    resp = await client.get("/limited")
    assert resp.status == 429
    assert resp.headers["Retry-After"] == "30"
    assert resp.content_type == "application/json"
    assert await resp.json() == {"error": "http_error", "message": "Too Many Requests"}
