"""The :class:`~authgate.ports.metrics.Metrics` port, written for Prometheus by
``prometheus_client`` and, when configured, exported by OTLP.

Counting, on every request, is a dictionary update in plain Python (no lock: everything runs
on the event loop's thread). Writing, once per scrape, is the library's: a collector hands it
metric families built exactly as the OpenTelemetry SDK's Prometheus exporter builds them (the
same names, units, labels and scope labels), so scrapers see the same series in either mode.
``prometheus_client`` is imported on the first scrape (docs/benchmarks.md: idle memory).

With the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``
set, every measurement is also recorded on the OpenTelemetry SDK, whose OTLP exporter sends it.
Every label value is bounded (provider names, codes, route templates).
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, Generic, TypeVar

from authgate.ports.metrics import LimitName, ProviderCall

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

# Seconds: a sign-in's own work is milliseconds, a provider round trip up to its timeout.
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# The semantic conventions' known methods; any other is reported as _OTHER so that a client
# cannot create label values at will.
KNOWN_METHODS = frozenset(
    {"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}
)

# The labels the OpenTelemetry exporter gives every series: the instrumentation scope (the
# "authgate" meter, no version or schema).
SCOPE_LABELS: Mapping[str, str] = {
    "otel_scope_name": "authgate",
    "otel_scope_schema_url": "",
    "otel_scope_version": "",
}

Attributes = Mapping[str, str | int]
# A point's label values, in the instrument's label order; None: the point lacks that label.
LabelValues = tuple[str | int | None, ...]
Point = TypeVar("Point")


class ServiceMetrics:
    """Counters and histograms of the service; :meth:`exposition` is the Prometheus text."""

    def __init__(
        self, service_name: str, *, otlp: bool | None = None, readers: Sequence[MetricReader] = ()
    ) -> None:
        """``otlp``: also export by OTLP (None: when its standard environment variables are
        set); ``readers``: more readers of the SDK's records (any makes the SDK count)."""
        otlp = _otlp_configured() if otlp is None else otlp
        self.provider: MeterProvider | None = (
            _sdk_provider(service_name, otlp, readers) if otlp or readers else None
        )
        self._meter = self.provider.get_meter("authgate") if self.provider is not None else None
        self._instruments: list[Counter | Histogram] = []
        self._sign_ins = self._counter(
            "authgate.sign_ins",
            "{sign_in}",
            "Completed callbacks by outcome",
            ("provider", "outcome", "reason"),
        )
        self._callback = self._histogram(
            "authgate.callback.duration", "Duration of sign-in callbacks", ("provider",)
        )
        self._initiation = self._histogram(
            "authgate.initiation.duration", "Duration of sign-in initiations", ("provider",)
        )
        self._provider = self._histogram(
            "authgate.provider.request.duration",
            "Duration of calls to identity providers by call and outcome",
            ("provider", "call", "outcome"),
        )
        self._rate_limited = self._counter(
            "authgate.rate_limit.rejections",
            "{request}",
            "Requests refused by a rate limit",
            ("limit",),
        )
        self._issued = self._counter(
            "authgate.sessions.issued", "{session}", "Sessions issued", ("provider",)
        )
        self._revoked = self._counter(
            "authgate.sessions.revoked", "{session}", "Sessions revoked", ()
        )
        self._http = self._histogram(
            "http.server.request.duration",
            "Duration of HTTP server requests",
            ("http.request.method", "http.route", "http.response.status_code"),
        )
        self._registry: CollectorRegistry | None = None  # made by the first scrape

    def _counter(self, name: str, unit: str, description: str, labels: tuple[str, ...]) -> Counter:
        mirror = None
        if self._meter is not None:
            mirror = self._meter.create_counter(name, unit=unit, description=description).add
        made = Counter(name, description, labels, mirror)
        self._instruments.append(made)
        return made

    def _histogram(self, name: str, description: str, labels: tuple[str, ...]) -> Histogram:
        mirror = None
        if self._meter is not None:
            mirror = self._meter.create_histogram(
                name,
                unit="s",
                description=description,
                explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
            ).record
        made = Histogram(name, description, labels, mirror)
        self._instruments.append(made)
        return made

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
        """One served request (``http.server.request.duration``); ``route``: the matched
        route's template, None when none matched."""
        # Normalised before counting: a client's made-up method must not add label values.
        method = method if method in KNOWN_METHODS else "_OTHER"
        self._http.record(seconds, (method, route, status))

    # -- reading and ending -----------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        """The families with at least one point, in the order the instruments were made."""
        for instrument in self._instruments:
            family = instrument.family()
            if family is not None:
                yield family

    @property
    def content_type(self) -> str:
        """The media type of :meth:`exposition`'s text, as prometheus_client names it."""
        from prometheus_client import CONTENT_TYPE_LATEST

        return CONTENT_TYPE_LATEST

    def exposition(self) -> bytes:
        """The current values in the Prometheus text format, written by prometheus_client."""
        from prometheus_client import CollectorRegistry, generate_latest

        if self._registry is None:
            self._registry = CollectorRegistry(auto_describe=False)
            self._registry.register(self)  # a collector: prometheus_client calls collect()
        return generate_latest(self._registry)

    def shutdown(self) -> None:
        """Flush the OTLP exporter (when there is one)."""
        if self.provider is not None:
            self.provider.shutdown()


class _Instrument(Generic[Point]):
    """The exporter's names (dots become underscores) and label sets (the points' labels and
    the scope's, sorted, empty where a point lacks one); ``mirror`` records every measurement
    on the OpenTelemetry SDK as well."""

    def __init__(
        self,
        name: str,
        description: str,
        labels: tuple[str, ...],
        mirror: Callable[[float, Attributes], None] | None = None,
    ) -> None:
        self.name = name.replace(".", "_")
        self.description = description
        self.labels = tuple(label.replace(".", "_") for label in labels)
        # label values -> the SDK's attributes for them (only when mirrored)
        self._attributes: dict[LabelValues, Attributes] = {}
        self._otel_labels = labels
        self._points: dict[LabelValues, Point] = {}
        self._mirror = mirror

    def _rows(self, points: Mapping[LabelValues, object]) -> tuple[list[str], list[list[str]]]:
        present = [
            {k: str(v) for k, v in zip(self.labels, values, strict=True) if v is not None}
            for values in points
        ]
        keys = sorted({key for labels in present for key in labels} | set(SCOPE_LABELS))
        rows = [[{**SCOPE_LABELS, **labels}.get(k, "") for k in keys] for labels in present]
        return keys, rows

    def _attributes_of(self, values: LabelValues) -> Attributes:
        found = self._attributes.get(values)
        if found is None:
            found = self._attributes[values] = {
                k: v for k, v in zip(self._otel_labels, values, strict=True) if v is not None
            }
        return found


class Counter(_Instrument[float]):
    """A monotonic counter (``<name>_total``)."""

    def add(self, amount: float, values: LabelValues) -> None:
        self._points[values] = self._points.get(values, 0.0) + amount
        if self._mirror is not None:
            self._mirror(amount, self._attributes_of(values))

    def family(self) -> CounterMetricFamily | None:
        if not self._points:
            return None
        from prometheus_client.core import CounterMetricFamily

        keys, rows = self._rows(self._points)
        family = CounterMetricFamily(self.name, self.description, labels=keys)
        for row, total in zip(rows, self._points.values(), strict=True):
            family.add_metric(row, total)
        return family


class Histogram(_Instrument[list[float]]):
    """A histogram in seconds with :data:`SECONDS_BUCKETS` (``bounds[i-1] < value <=
    bounds[i]``, as the SDK counts) and the sum: its points are the count per bucket, then
    the sum."""

    def record(self, value: float, values: LabelValues) -> None:
        point = self._points.get(values)
        if point is None:
            point = self._points[values] = [0] * (len(SECONDS_BUCKETS) + 2)
        point[bisect_left(SECONDS_BUCKETS, value)] += 1
        point[-1] += value
        if self._mirror is not None:
            self._mirror(value, self._attributes_of(values))

    def family(self) -> HistogramMetricFamily | None:
        if not self._points:
            return None
        from prometheus_client.core import HistogramMetricFamily

        keys, rows = self._rows(self._points)
        family = HistogramMetricFamily(self.name, self.description, labels=keys, unit="seconds")
        for row, point in zip(rows, self._points.values(), strict=True):
            cumulative = accumulate(int(count) for count in point[:-1])
            buckets = list(zip(_BUCKET_LABELS, cumulative, strict=True))
            family.add_metric(row, buckets, sum_value=point[-1])
        return family


# The bucket labels as the exporter writes them (str of the bound, then +Inf).
_BUCKET_LABELS = (*(f"{bound}" for bound in SECONDS_BUCKETS), "+Inf")


def _otlp_configured() -> bool:
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    )


def _sdk_provider(service_name: str, otlp: bool, readers: Sequence[MetricReader]) -> MeterProvider:
    """The OpenTelemetry metrics SDK, with a periodic OTLP/HTTP exporter when ``otlp`` (its
    standard ``OTEL_EXPORTER_OTLP_*`` variables say where); imported only when needed."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    all_readers = list(readers)
    if otlp:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        all_readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    return MeterProvider(
        metric_readers=all_readers, resource=Resource.create({SERVICE_NAME: service_name})
    )
