"""The :class:`~authgate.ports.metrics.Metrics` port on the OpenTelemetry SDK.

One ``MeterProvider`` per application with a Prometheus reader on a registry of its own (so two
applications in one process, as in tests, never share counts) and, when the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` is set, a periodic
OTLP/HTTP exporter. Attribute dicts are built once per label combination and reused: every
label value is bounded (configured provider names, outcome and reason codes, route templates,
status codes), so the cache is bounded too.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.metrics_core import Metric

from authgate.ports.metrics import LimitName, ProviderCall

# Seconds: a sign-in's own work is milliseconds, a provider round trip up to its timeout.
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# The semantic conventions' known methods; any other is reported as _OTHER so that a client
# cannot create label values at will.
KNOWN_METHODS = frozenset(
    {"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}
)

Attributes = Mapping[str, str | int]


class OtelMetrics:
    """Counters and histograms of the service; :meth:`exposition` is the Prometheus text."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, service_name: str, *, otlp: bool | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        readers: list[MetricReader] = [
            PrometheusMetricReader(disable_target_info=True, registry=self.registry)
        ]
        if otlp is None:
            otlp = bool(
                os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            )
        if otlp:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )

            readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
        self.provider = MeterProvider(
            metric_readers=readers, resource=Resource.create({SERVICE_NAME: service_name})
        )
        meter = self.provider.get_meter("authgate")

        self._sign_ins = meter.create_counter(
            "authgate.sign_ins", unit="{sign_in}", description="Completed callbacks by outcome"
        )
        self._callback = meter.create_histogram(
            "authgate.callback.duration",
            unit="s",
            description="Duration of sign-in callbacks",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
        )
        self._initiation = meter.create_histogram(
            "authgate.initiation.duration",
            unit="s",
            description="Duration of sign-in initiations",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
        )
        self._provider = meter.create_histogram(
            "authgate.provider.request.duration",
            unit="s",
            description="Duration of calls to identity providers by call and outcome",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
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
        self._http = meter.create_histogram(
            "http.server.request.duration",
            unit="s",
            description="Duration of HTTP server requests",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
        )
        self._attributes: dict[tuple[object, ...], Attributes] = {}
        # The request-duration histogram is counted here, not by the SDK, when its only reader
        # is the Prometheus one (no OTLP): the SDK's per-measurement path (attribute cleaning
        # and hashing, dispatch to each reader) cost ~100k instructions per request, a tenth of
        # a whole authenticated read (docs/benchmarks.md, issue 13).
        self._durations: RequestDurations | None = None
        if not otlp:
            self._durations = RequestDurations(SECONDS_BUCKETS)
            self.registry.register(self._durations)

    def _bound(self, key: tuple[object, ...], build: dict[str, str | int]) -> Attributes:
        found = self._attributes.get(key)
        if found is None:
            found = self._attributes[key] = build
        return found

    # -- the port ---------------------------------------------------------------------------

    def sign_in(self, provider: str, outcome: str, reason: str) -> None:
        key = ("sign_in", provider, outcome, reason)
        found = self._attributes.get(key)
        if found is None:
            found = self._bound(key, {"provider": provider, "outcome": outcome, "reason": reason})
        self._sign_ins.add(1, found)

    def callback_duration(self, provider: str, seconds: float) -> None:
        self._callback.record(seconds, self._provider_attributes(provider))

    def initiation_duration(self, provider: str, seconds: float) -> None:
        self._initiation.record(seconds, self._provider_attributes(provider))

    def rate_limited(self, limit: LimitName) -> None:
        key = ("limit", limit)
        found = self._attributes.get(key) or self._bound(key, {"limit": limit})
        self._rate_limited.add(1, found)

    def sessions_issued(self, provider: str) -> None:
        self._issued.add(1, self._provider_attributes(provider))

    def sessions_revoked(self, count: int) -> None:
        self._revoked.add(count)

    def provider_call(self, provider: str, call: ProviderCall, seconds: float, ok: bool) -> None:
        key = ("call", provider, call, ok)
        found = self._attributes.get(key)
        if found is None:
            outcome = "ok" if ok else "failed"
            found = self._bound(key, {"provider": provider, "call": call, "outcome": outcome})
        self._provider.record(seconds, found)

    # -- HTTP server ------------------------------------------------------------------------

    def http_request(self, method: str, route: str | None, status: int, seconds: float) -> None:
        """One served request (the semantic conventions' ``http.server.request.duration``);
        ``route`` is the matched route's template, None when no route matched."""
        # Normalised before the cache: a client's made-up method must not grow it.
        method = method if method in KNOWN_METHODS else "_OTHER"
        if self._durations is not None:
            self._durations.record(method, route, status, seconds)
            return
        key = ("http", method, route, status)
        found = self._attributes.get(key)
        if found is None:
            attributes: dict[str, str | int] = {
                "http.request.method": method,
                "http.response.status_code": status,
            }
            if route is not None:
                attributes["http.route"] = route
            found = self._bound(key, attributes)
        self._http.record(seconds, found)

    # -- reading and ending -----------------------------------------------------------------

    def exposition(self) -> bytes:
        """The current values in the Prometheus text format."""
        return generate_latest(self.registry)

    def shutdown(self) -> None:
        """Flush the OTLP exporter (when there is one) and stop the readers."""
        self.provider.shutdown()

    def _provider_attributes(self, provider: str) -> Attributes:
        key = ("provider", provider)
        return self._attributes.get(key) or self._bound(key, {"provider": provider})


class RequestDurations:
    """``http.server.request.duration`` counted in plain Python and collected by the Prometheus
    registry exactly as the OpenTelemetry Prometheus exporter writes an SDK histogram: the same
    name, help, labels (the attributes, dots as underscores, and the ``otel_scope_*`` labels of
    the ``authgate`` meter; a label some points lack is empty on them), buckets (the SDK's:
    ``bounds[i-1] < value <= bounds[i]``) and sum (tests/unit/test_request_durations.py).

    Recording and collecting both run on the event loop's thread (the middleware and the
    ``/metrics`` handler), so there is no lock. Its label values are bounded like the
    attribute cache's (known methods, route templates, status codes)."""

    NAME = "http_server_request_duration"
    HELP = "Duration of HTTP server requests"
    # the exporter's labels of the instrumentation scope (the "authgate" meter, no version)
    SCOPE_LABELS: Mapping[str, str] = MappingProxyType(
        {"otel_scope_name": "authgate", "otel_scope_schema_url": "", "otel_scope_version": ""}
    )

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        # (method, route, status) -> [count per bucket..., sum]
        self._points: dict[tuple[str, str | None, int], list[float]] = {}

    def record(self, method: str, route: str | None, status: int, seconds: float) -> None:
        key = (method, route, status)
        point = self._points.get(key)
        if point is None:
            point = self._points[key] = [0] * (len(self._bounds) + 2)
        point[bisect_left(self._bounds, seconds)] += 1
        point[-1] += seconds

    def describe(self) -> list[Metric]:
        return []  # nothing to check for duplicates when registered

    def collect(self) -> Iterator[Metric]:
        if not self._points:
            return
        rows = []
        for (method, route, status), point in self._points.items():
            labels = {"http_request_method": method, "http_response_status_code": str(status)}
            if route is not None:
                labels["http_route"] = route
            rows.append((labels, point))
        keys = sorted({key for labels, _ in rows for key in labels} | set(self.SCOPE_LABELS))
        family = HistogramMetricFamily(self.NAME, self.HELP, labels=keys, unit="seconds")
        for labels, point in rows:
            values = {**self.SCOPE_LABELS, **labels}
            buckets = []
            total = 0
            for bound, count in zip((*self._bounds, "+Inf"), point[:-1], strict=True):
                total += int(count)
                buckets.append((f"{bound}", total))
            family.add_metric([values.get(k, "") for k in keys], buckets, sum_value=point[-1])
        yield family
