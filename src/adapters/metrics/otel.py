"""The :class:`~authgate.ports.metrics.Metrics` port, exposed in the Prometheus text format.

By default (no OTLP exporter configured) every instrument is counted in plain Python and
written in the Prometheus text format here, exactly as the OpenTelemetry SDK's Prometheus
exporter writes the same measurements (tests/unit/test_request_durations.py compares them
byte for byte): neither the metrics SDK nor ``prometheus_client`` is imported, which keeps
about 1.6 MiB and 60 modules out of every process (docs/benchmarks.md, issue 13).

When the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` is
set, the SDK counts instead: one ``MeterProvider`` per application with a Prometheus reader on a
registry of its own (so two applications in one process, as in tests, never share counts) and a
periodic OTLP/HTTP exporter. Attribute dicts are built once per label combination and reused:
every label value is bounded (configured provider names, outcome and reason codes, route
templates, status codes), so the cache is bounded too.
"""

from __future__ import annotations

import math
import os
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from authgate.ports.metrics import LimitName, ProviderCall

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter
    from opentelemetry.sdk.metrics import MeterProvider

# prometheus_client's CONTENT_TYPE_LATEST (prometheus-client 0.26), what /metrics has always sent
CONTENT_TYPE = "text/plain; version=1.0.0; charset=utf-8"

# Seconds: a sign-in's own work is milliseconds, a provider round trip up to its timeout.
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# The semantic conventions' known methods; any other is reported as _OTHER so that a client
# cannot create label values at will.
KNOWN_METHODS = frozenset(
    {"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}
)

Attributes = Mapping[str, str | int]


class OtelMetrics:
    """Counters and histograms of the service; :meth:`exposition` is the Prometheus text.

    With Prometheus as the only reader (no OTLP exporter), every instrument is counted here in
    plain Python (:class:`PlainCounter`, :class:`PlainHistogram`) and written exactly as the
    SDK's exporter would write it, byte for byte (tests/unit/test_request_durations.py): the
    SDK's per-measurement path (attribute cleaning and hashing, dispatch to each reader) cost
    ~100k instructions per measurement, and a sign-in makes five (docs/benchmarks.md, issue
    13). With OTLP configured the SDK records everything, for both readers."""

    content_type = CONTENT_TYPE

    def __init__(
        self, service_name: str, *, otlp: bool | None = None, plain: bool | None = None
    ) -> None:
        """``otlp``: add the OTLP exporter (None: when its standard environment variables are
        set); ``plain``: count in plain Python (None: when Prometheus is the only reader;
        False makes the SDK count, as the exporter's reference in the tests)."""
        if otlp is None:
            otlp = bool(
                os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            )
        if plain and otlp:
            raise ValueError("an OTLP exporter reads only what the SDK counts")
        plain = not otlp if plain is None else plain
        self.provider: MeterProvider | None = None  # the SDK's, when it counts
        meter: _PlainMeter | _SdkMeter
        if plain:
            meter = _PlainMeter()
            self._text: Callable[[], bytes] = meter.text
        else:
            meter = self._sdk(service_name, otlp)
        # The instruments in the order the SDK exporter lists them (creation order).
        self._sign_ins = meter.counter(
            "authgate.sign_ins",
            "{sign_in}",
            "Completed callbacks by outcome",
            ("provider", "outcome", "reason"),
        )
        self._callback = meter.histogram(
            "authgate.callback.duration", "Duration of sign-in callbacks", ("provider",)
        )
        self._initiation = meter.histogram(
            "authgate.initiation.duration", "Duration of sign-in initiations", ("provider",)
        )
        self._provider = meter.histogram(
            "authgate.provider.request.duration",
            "Duration of calls to identity providers by call and outcome",
            ("provider", "call", "outcome"),
        )
        self._rate_limited = meter.counter(
            "authgate.rate_limit.rejections",
            "{request}",
            "Requests refused by a rate limit",
            ("limit",),
        )
        self._issued = meter.counter(
            "authgate.sessions.issued", "{session}", "Sessions issued", ("provider",)
        )
        self._revoked = meter.counter(
            "authgate.sessions.revoked", "{session}", "Sessions revoked", ()
        )
        self._http = meter.histogram(
            "http.server.request.duration",
            "Duration of HTTP server requests",
            ("http.request.method", "http.route", "http.response.status_code"),
        )

    def _sdk(self, service_name: str, otlp: bool) -> _SdkMeter:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from prometheus_client import CollectorRegistry, generate_latest

        registry = CollectorRegistry(auto_describe=True)
        readers: list[MetricReader] = [
            PrometheusMetricReader(disable_target_info=True, registry=registry)
        ]
        if otlp:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )

            readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
        self.provider = MeterProvider(
            metric_readers=readers, resource=Resource.create({SERVICE_NAME: service_name})
        )
        self._text = lambda: generate_latest(registry)
        return _SdkMeter(self.provider.get_meter("authgate"))

    # -- the port ---------------------------------------------------------------------------

    def sign_in(self, provider: str, outcome: str, reason: str) -> None:
        self._sign_ins.add(1, (provider, outcome, reason))

    def callback_duration(self, provider: str, seconds: float) -> None:
        self._callback.record(seconds, (provider,))

    def initiation_duration(self, provider: str, seconds: float) -> None:
        self._initiation.record(seconds, (provider,))

    def rate_limited(self, limit: LimitName) -> None:
        self._rate_limited.add(1, (limit,))

    def sessions_issued(self, provider: str) -> None:
        self._issued.add(1, (provider,))

    def sessions_revoked(self, count: int) -> None:
        self._revoked.add(count, ())

    def provider_call(self, provider: str, call: ProviderCall, seconds: float, ok: bool) -> None:
        self._provider.record(seconds, (provider, call, "ok" if ok else "failed"))

    # -- HTTP server ------------------------------------------------------------------------

    def http_request(self, method: str, route: str | None, status: int, seconds: float) -> None:
        """One served request (the semantic conventions' ``http.server.request.duration``);
        ``route`` is the matched route's template, None when no route matched (the point then
        has no ``http.route``)."""
        # Normalised before counting: a client's made-up method must not add label values.
        method = method if method in KNOWN_METHODS else "_OTHER"
        self._http.record(seconds, (method, route, status))

    # -- reading and ending -----------------------------------------------------------------

    def exposition(self) -> bytes:
        """The current values in the Prometheus text format."""
        return self._text()

    def shutdown(self) -> None:
        """Flush the OTLP exporter (when there is one) and stop the readers."""
        if self.provider is not None:
            self.provider.shutdown()


# A point's label values, in the instrument's label order; None: the point lacks that label.
LabelValues = tuple[str | int | None, ...]


class _Counter(Protocol):
    def add(self, amount: float, values: LabelValues) -> None: ...


class _Histogram(Protocol):
    def record(self, value: float, values: LabelValues) -> None: ...


class _SdkMeter:
    """The instruments on the OpenTelemetry SDK (an OTLP exporter reads them too)."""

    def __init__(self, meter: Meter) -> None:
        self._meter = meter

    def counter(self, name: str, unit: str, description: str, labels: tuple[str, ...]) -> _Counter:
        counter = self._meter.create_counter(name, unit=unit, description=description)
        return _SdkInstrument(counter.add, labels)

    def histogram(self, name: str, description: str, labels: tuple[str, ...]) -> _Histogram:
        histogram = self._meter.create_histogram(
            name,
            unit="s",
            description=description,
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
        )
        return _SdkInstrument(histogram.record, labels)


class _SdkInstrument:
    """An SDK counter or histogram fed label values; the attribute dicts are built once per
    combination and reused (every label value is bounded, so the cache is too)."""

    def __init__(
        self, measure: Callable[[float, Attributes], None], labels: tuple[str, ...]
    ) -> None:
        self._measure = measure
        self._labels = labels
        self._attributes: dict[LabelValues, Attributes] = {}

    def _bound(self, values: LabelValues) -> Attributes:
        found = self._attributes.get(values)
        if found is None:
            found = self._attributes[values] = {
                k: v for k, v in zip(self._labels, values, strict=True) if v is not None
            }
        return found

    def add(self, amount: float, values: LabelValues) -> None:
        self._measure(amount, self._bound(values))

    def record(self, value: float, values: LabelValues) -> None:
        self._measure(value, self._bound(values))


class _PlainMeter:
    """The instruments counted in plain Python, written in creation order (the order a
    Prometheus registry collects them in)."""

    def __init__(self) -> None:
        self._instruments: list[PlainCounter | PlainHistogram] = []

    def counter(
        self, name: str, unit: str, description: str, labels: tuple[str, ...]
    ) -> PlainCounter:
        counter = PlainCounter(name, description, labels)
        self._instruments.append(counter)
        return counter

    def histogram(self, name: str, description: str, labels: tuple[str, ...]) -> PlainHistogram:
        histogram = PlainHistogram(name, description, labels, SECONDS_BUCKETS)
        self._instruments.append(histogram)
        return histogram

    def text(self) -> bytes:
        return "".join(line for i in self._instruments for line in i.text()).encode()


# the exporter's labels of the instrumentation scope (the "authgate" meter, no version)
SCOPE_LABELS: Mapping[str, str] = MappingProxyType(
    {"otel_scope_name": "authgate", "otel_scope_schema_url": "", "otel_scope_version": ""}
)


def go_float(value: float) -> str:
    """A sample value or bucket bound as Prometheus writes it (Go's float formatting:
    ``+Inf``, ``NaN``, an exponent from 1e+06 up, Python's shortest repr otherwise)."""
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(float(value))
    dot = text.find(".")
    if value > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return text


def _label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class _Plain:
    """What the plain instruments share: the exporter's name and label sanitising, the label
    set of a family (the union of the points' labels and the scope's; a label some points lack
    is empty on them, as the exporter writes it), and the family's header lines."""

    kind = ""

    def __init__(self, name: str, description: str, labels: tuple[str, ...]) -> None:
        self.name = name.replace(".", "_")
        self.description = description
        self.labels = tuple(label.replace(".", "_") for label in labels)

    def _rows(self, points: Iterable[LabelValues]) -> list[dict[str, str]]:
        present = [
            {k: str(v) for k, v in zip(self.labels, values, strict=True) if v is not None}
            for values in points
        ]
        keys = {key for labels in present for key in labels} | set(SCOPE_LABELS)
        return [{k: {**SCOPE_LABELS, **labels}.get(k, "") for k in keys} for labels in present]

    def _header(self, family: str) -> str:
        help_text = self.description.replace("\\", r"\\").replace("\n", r"\n")
        return f"# HELP {family} {help_text}\n# TYPE {family} {self.kind}\n"


def _sample(name: str, labels: Mapping[str, str], value: float) -> str:
    """One sample line: the labels sorted by name, as prometheus_client writes them."""
    pairs = ",".join(f'{k}="{_label_value(v)}"' for k, v in sorted(labels.items()))
    return f"{name}{{{pairs}}} {go_float(value)}\n"


class PlainCounter(_Plain):
    """A monotonic counter (``<name>_total``), counted on the event loop's thread: no lock."""

    kind = "counter"

    def __init__(self, name: str, description: str, labels: tuple[str, ...]) -> None:
        super().__init__(name, description, labels)
        self._points: dict[LabelValues, float] = {}

    def add(self, amount: float, values: LabelValues) -> None:
        self._points[values] = self._points.get(values, 0.0) + amount

    def text(self) -> Iterable[str]:
        if not self._points:
            return
        family = f"{self.name}_total"
        yield self._header(family)
        for labels, total in zip(self._rows(self._points), self._points.values(), strict=True):
            yield _sample(family, labels, total)


class PlainHistogram(_Plain):
    """A histogram in seconds with the SDK's buckets (``bounds[i-1] < value <= bounds[i]``)
    and sum, recorded and collected on the event loop's thread: no lock."""

    kind = "histogram"

    def __init__(
        self, name: str, description: str, labels: tuple[str, ...], bounds: tuple[float, ...]
    ) -> None:
        super().__init__(name, description, labels)
        self._bounds = bounds
        # the bucket labels as the exporter writes them (str of the bound, then +Inf)
        self._les = (*(f"{bound}" for bound in bounds), "+Inf")
        # label values -> [count per bucket..., sum]
        self._points: dict[LabelValues, list[float]] = {}

    def record(self, value: float, values: LabelValues) -> None:
        point = self._points.get(values)
        if point is None:
            point = self._points[values] = [0] * (len(self._bounds) + 2)
        point[bisect_left(self._bounds, value)] += 1
        point[-1] += value

    def text(self) -> Iterable[str]:
        if not self._points:
            return
        family = f"{self.name}_seconds"
        yield self._header(family)
        bucket = f"{family}_bucket"
        for labels, point in zip(self._rows(self._points), self._points.values(), strict=True):
            total = 0
            for le, count in zip(self._les, point[:-1], strict=True):
                total += int(count)
                yield _sample(bucket, {**labels, "le": le}, total)
            yield _sample(f"{family}_count", labels, total)
            yield _sample(f"{family}_sum", labels, point[-1])
