"""The service's metrics: counted in plain Python, written for Prometheus by prometheus_client,
exported by OTLP when configured."""

from .prometheus import ServiceMetrics

__all__ = ["ServiceMetrics"]
