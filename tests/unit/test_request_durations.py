"""The service's instruments, counted in plain Python and written by prometheus_client, are
exposed exactly as the OpenTelemetry SDK and its Prometheus exporter expose the same
measurements (the same series, byte for byte), without loading the SDK unless OTLP is on."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from authgate.adapters.metrics.prometheus import SECONDS_BUCKETS, ServiceMetrics

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
    metrics = ServiceMetrics("authgate-test", otlp=False)
    for method, route, status, seconds in REQUESTS:
        metrics.http_request(method, route, status, seconds)
    ours = metrics.exposition().decode()
    metrics.shutdown()
    expected = sdk_exposition()
    assert "http_server_request_duration_seconds_bucket{" in expected
    assert ours == expected


def test_nothing_is_exposed_before_a_request() -> None:
    metrics = ServiceMetrics("authgate-test", otlp=False)
    assert "http_server_request_duration" not in metrics.exposition().decode()
    metrics.shutdown()


def _every_measurement(metrics: ServiceMetrics | SdkReference) -> None:
    for method, route, status, seconds in REQUESTS:
        metrics.http_request(method, route, status, seconds)
    for provider, outcome, reason in [
        ("google", "signed_in", "none"),
        ("google", "signed_in", "none"),
        ("apple", "failed", "invalid_state"),
        ("facebook", "registered", "none"),
    ]:
        metrics.sign_in(provider, outcome, reason)
    for provider, seconds in [("google", 0.004), ("google", 0.011), ("apple", 3.0)]:
        metrics.callback_duration(provider, seconds)
        metrics.initiation_duration(provider, seconds / 10)
        metrics.sessions_issued(provider)
    metrics.provider_call("google", "token", 0.02, True)
    metrics.provider_call("google", "token", 12.0, False)
    metrics.provider_call("facebook", "profile", 0.1, True)
    metrics.rate_limited("callback")
    metrics.rate_limited("callback")
    metrics.rate_limited("initiation")
    metrics.sessions_revoked(3)
    metrics.sessions_revoked(1)


class SdkReference:
    """The OpenTelemetry SDK counting every instrument as the service declares them, with its
    Prometheus exporter writing the text: what an OpenTelemetry deployment would scrape."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.provider = MeterProvider(
            metric_readers=[
                PrometheusMetricReader(disable_target_info=True, registry=self.registry)
            ]
        )
        meter = self.provider.get_meter("authgate")

        def histogram(name: str, description: str) -> Any:
            return meter.create_histogram(
                name,
                unit="s",
                description=description,
                explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
            )

        self._sign_ins = meter.create_counter(
            "authgate.sign_ins", unit="{sign_in}", description="Completed callbacks by outcome"
        )
        self._callback = histogram("authgate.callback.duration", "Duration of sign-in callbacks")
        self._initiation = histogram(
            "authgate.initiation.duration", "Duration of sign-in initiations"
        )
        self._provider = histogram(
            "authgate.provider.request.duration",
            "Duration of calls to identity providers by call and outcome",
        )
        self._rate_limited = meter.create_counter(
            "authgate.rate_limit.rejections",
            unit="{request}",
            description="Requests refused by a rate limit",
        )
        self._issued = meter.create_counter(
            "authgate.sessions.issued", unit="{session}", description="Sessions issued"
        )
        self._revoked = meter.create_counter(
            "authgate.sessions.revoked", unit="{session}", description="Sessions revoked"
        )
        self._http = histogram("http.server.request.duration", "Duration of HTTP server requests")

    def sign_in(self, provider: str, outcome: str, reason: str) -> None:
        self._sign_ins.add(1, {"provider": provider, "outcome": outcome, "reason": reason})

    def callback_duration(self, provider: str, seconds: float) -> None:
        self._callback.record(seconds, {"provider": provider})

    def initiation_duration(self, provider: str, seconds: float) -> None:
        self._initiation.record(seconds, {"provider": provider})

    def sessions_issued(self, provider: str) -> None:
        self._issued.add(1, {"provider": provider})

    def provider_call(self, provider: str, call: str, seconds: float, ok: bool) -> None:
        outcome = "ok" if ok else "failed"
        self._provider.record(seconds, {"provider": provider, "call": call, "outcome": outcome})

    def rate_limited(self, limit: str) -> None:
        self._rate_limited.add(1, {"limit": limit})

    def sessions_revoked(self, count: int) -> None:
        self._revoked.add(count, {})

    def http_request(self, method: str, route: str | None, status: int, seconds: float) -> None:
        known = {"GET", "POST", "DELETE"}
        attributes: dict[str, str | int] = {
            "http.request.method": method if method in known else "_OTHER",
            "http.response.status_code": status,
        }
        if route is not None:
            attributes["http.route"] = route
        self._http.record(seconds, attributes)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def shutdown(self) -> None:
        self.provider.shutdown()


def test_every_instrument_is_exposed_as_the_sdk_exports_it() -> None:
    ours, sdk = ServiceMetrics("t", otlp=False), SdkReference()
    _every_measurement(ours)
    _every_measurement(sdk)
    text, expected = ours.exposition().decode(), sdk.exposition().decode()
    ours.shutdown()
    sdk.shutdown()
    for family in (
        "authgate_sign_ins_total",
        "authgate_callback_duration_seconds",
        "authgate_initiation_duration_seconds",
        "authgate_provider_request_duration_seconds",
        "authgate_rate_limit_rejections_total",
        "authgate_sessions_issued_total",
        "authgate_sessions_revoked_total",
        "http_server_request_duration_seconds",
    ):
        assert f"# TYPE {family} " in expected
    # Family by family, byte for byte (the SDK lists families in the order of their first
    # measurement, ours in the order the instruments were made: Prometheus reads either).
    assert _families(text) == _families(expected)


def _families(exposition: str) -> dict[str, str]:
    blocks = ["# HELP " + b for b in exposition.split("# HELP ")[1:]]
    return {block.split(" ", 3)[2]: block for block in blocks}


def test_without_otlp_the_metrics_sdk_is_not_loaded() -> None:
    """Counting in plain Python keeps the metrics SDK and the exporters out of a process that
    does not export by OTLP: checked in a fresh interpreter, which counts, writes the text and
    shuts down."""
    probe = (
        "import sys\n"
        "from authgate.adapters.metrics import ServiceMetrics\n"
        "metrics = ServiceMetrics('t', otlp=False)\n"
        "metrics.sign_in('google', 'signed_in', 'none')\n"
        "metrics.http_request('GET', '/x', 200, 0.01)\n"
        "text = metrics.exposition().decode()\n"
        "metrics.shutdown()\n"
        "print(metrics.provider, text.count('authgate_sign_ins_total{'),\n"
        "      sorted(m for m in sys.modules if m.startswith(\n"
        "          ('opentelemetry.sdk.metrics', 'opentelemetry.exporter'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["None", "1", "[]"]


def test_when_the_sdk_counts_too_the_text_is_the_same() -> None:
    """With an SDK reader (the OTLP exporter's, in production), every measurement is also
    recorded on the SDK; /metrics does not change."""
    reader = InMemoryMetricReader()
    plain, mirrored = ServiceMetrics("t", otlp=False), ServiceMetrics("t", readers=[reader])
    _every_measurement(plain)
    _every_measurement(mirrored)
    assert mirrored.exposition() == plain.exposition()
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        metric.name: list(metric.data.data_points)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    assert sum(p.value for p in points["authgate.sessions.revoked"]) == 4
    assert sum(p.count for p in points["http.server.request.duration"]) == len(REQUESTS)
    mirrored.shutdown()


def test_the_content_type_is_prometheus_clients() -> None:
    assert ServiceMetrics("t", otlp=False).content_type == CONTENT_TYPE_LATEST
