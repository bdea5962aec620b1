"""Metrics on the OpenTelemetry SDK: scraped by Prometheus, exported by OTLP when configured."""

from .otel import OtelMetrics

__all__ = ["OtelMetrics"]
