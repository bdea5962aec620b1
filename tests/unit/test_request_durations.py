"""The request-duration histogram counted by authgate itself (issue 13) is exposed exactly as
the OpenTelemetry SDK and its Prometheus exporter expose the same measurements."""

from __future__ import annotations

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest

from authgate.adapters.metrics.otel import SECONDS_BUCKETS, OtelMetrics

# (method as the client sent it, route template or None, status, seconds): bucket bounds
# exactly, between them, zero, beyond the last one, requests that matched no route, a made-up
# method, and repeats that add up.
REQUESTS = [
    ("GET", "/v1/account/providers", 200, 0.0012),
    ("GET", "/v1/account/providers", 200, 0.005),
    ("GET", "/v1/account/providers", 200, 0.0050001),
    ("GET", "/v1/account/providers", 401, 0.0),
    ("POST", "/v1/auth/logout", 204, 0.25),
    ("GET", None, 404, 0.02),
    ("BREW", None, 404, 11.0),
    ("DELETE", "/v1/account/sessions/{id}", 204, 10.0),
    ("GET", "/v1/account/providers", 200, 0.7),
]


def sdk_exposition() -> str:
    """The same measurements through the SDK's histogram (how authgate recorded them before)."""
    registry = CollectorRegistry(auto_describe=True)
    provider = MeterProvider(
        metric_readers=[PrometheusMetricReader(disable_target_info=True, registry=registry)]
    )
    histogram = provider.get_meter("authgate").create_histogram(
        "http.server.request.duration",
        unit="s",
        description="Duration of HTTP server requests",
        explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
    )
    known = {"GET", "POST", "DELETE"}
    for method, route, status, seconds in REQUESTS:
        attributes: dict[str, str | int] = {
            "http.request.method": method if method in known else "_OTHER",
            "http.response.status_code": status,
        }
        if route is not None:
            attributes["http.route"] = route
        histogram.record(seconds, attributes)
    text = generate_latest(registry).decode()
    provider.shutdown()
    return text


def test_the_exposition_is_the_sdk_exporters() -> None:
    metrics = OtelMetrics("authgate-test", otlp=False)
    for method, route, status, seconds in REQUESTS:
        metrics.http_request(method, route, status, seconds)
    ours = metrics.exposition().decode()
    metrics.shutdown()
    expected = sdk_exposition()
    assert "http_server_request_duration_seconds_bucket{" in expected
    assert ours == expected


def test_nothing_is_exposed_before_a_request() -> None:
    metrics = OtelMetrics("authgate-test", otlp=False)
    assert "http_server_request_duration" not in metrics.exposition().decode()
    metrics.shutdown()
