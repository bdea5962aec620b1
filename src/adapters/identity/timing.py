"""Timing of the calls to a provider, reported to the metrics port."""

from __future__ import annotations

import time
from types import TracebackType

from authgate.ports.metrics import Metrics, ProviderCall


class ProviderCallTimer:
    """Times one provider call and reports it; failed when it raises or ``ok`` is cleared."""

    __slots__ = ("_call", "_metrics", "_provider", "_started", "ok")

    def __init__(self, metrics: Metrics, provider: str, call: ProviderCall) -> None:
        self._metrics, self._provider, self._call = metrics, provider, call
        self._started = 0.0
        self.ok = True

    def __enter__(self) -> ProviderCallTimer:
        self._started = time.perf_counter()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        seconds = time.perf_counter() - self._started
        self._metrics.provider_call(self._provider, self._call, seconds, self.ok and kind is None)
