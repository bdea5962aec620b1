"""The instruments counted and written by authgate itself (issue 13) are exposed exactly as
the OpenTelemetry SDK and its Prometheus exporter (prometheus_client) expose the same
measurements, byte for byte, without loading either."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.utils import floatToGoString

from authgate.adapters.metrics.otel import SECONDS_BUCKETS, OtelMetrics, PlainCounter, go_float

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


def _every_measurement(metrics: OtelMetrics) -> None:
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


def test_every_instrument_is_exposed_as_the_sdk_exports_it() -> None:
    ours, sdk = OtelMetrics("t", otlp=False), OtelMetrics("t", otlp=False, plain=False)
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
    # measurement, the registry ours in registration order: Prometheus reads either).
    assert _families(text) == _families(expected)


def _families(exposition: str) -> dict[str, str]:
    blocks = ["# HELP " + b for b in exposition.split("# HELP ")[1:]]
    return {block.split(" ", 3)[2]: block for block in blocks}


def test_the_plain_instruments_load_neither_the_sdk_nor_prometheus_client() -> None:
    """Counting in plain Python is what keeps the metrics SDK, its Prometheus exporter and
    prometheus_client (about 1.6 MiB resident, 60 modules) out of a process: checked in a
    fresh interpreter, which counts, writes the text and shuts down."""
    probe = (
        "import sys\n"
        "from authgate.adapters.metrics import OtelMetrics\n"
        "metrics = OtelMetrics('t', otlp=False)\n"
        "metrics.sign_in('google', 'signed_in', 'none')\n"
        "metrics.http_request('GET', '/x', 200, 0.01)\n"
        "text = metrics.exposition().decode()\n"
        "metrics.shutdown()\n"
        "print(metrics.provider, text.count('authgate_sign_ins_total{'),\n"
        "      sorted(m for m in sys.modules if m.startswith(\n"
        "          ('prometheus_client', 'opentelemetry.sdk.metrics',\n"
        "           'opentelemetry.exporter'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["None", "1", "[]"]


def test_the_content_type_is_prometheus_clients() -> None:
    assert OtelMetrics("t", otlp=False).content_type == CONTENT_TYPE_LATEST
    sdk = OtelMetrics("t", otlp=False, plain=False)
    assert sdk.content_type == CONTENT_TYPE_LATEST
    sdk.shutdown()


finite_or_not = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [0.0, -0.0, 1.0, 1e6, 999999.0, 1234567.0, 1e21, 1e22, 0.1, 1e-7, 12345678901234567890.0]
)


@given(finite_or_not)
def test_values_are_written_as_prometheus_client_writes_them(value: float) -> None:
    assert go_float(value) == floatToGoString(value)


class _Family:
    """A registry collector yielding one prometheus_client counter family."""

    def __init__(self, family: CounterMetricFamily) -> None:
        self.family = family

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield self.family


@given(
    st.lists(
        st.tuples(st.text(max_size=12), st.integers(min_value=1, max_value=10**9)),
        min_size=1,
        max_size=5,
        unique_by=lambda point: point[0],
    ),
    st.text(max_size=20),
)
def test_label_values_and_help_are_escaped_as_prometheus_client_escapes_them(
    points: list[tuple[str, int]], description: str
) -> None:
    """Any label value (quotes, backslashes, new lines, any character) and any description."""
    ours = PlainCounter("t.count", description, ("route",))
    family = CounterMetricFamily(
        "t_count",
        description,
        labels=["otel_scope_name", "otel_scope_schema_url", "otel_scope_version", "route"],
    )
    for label, amount in points:
        ours.add(amount, (label,))
        family.add_metric(["authgate", "", "", label], float(amount))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Family(family))
    assert "".join(ours.text()) == generate_latest(registry).decode()
