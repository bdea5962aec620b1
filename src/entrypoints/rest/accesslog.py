"""The access log (one line per request, cheap enough to leave on) and the service's log handler.

Each access line is an INFO record of the ``authgate.access`` logger naming the client's address,
the method, the path (never the query string: it carries codes and states), the status and the
duration; no headers, so no credentials. The request's values are :func:`~.logtext.log_safe`::

    2026-11-23 12:00:00,123 INFO authgate.access 127.0.0.1 GET /v1/account/providers 200 1.4ms

The service's handler (:func:`install_service_handler`) is the standard library's pair for
logging from an event loop: a :class:`~logging.handlers.QueueHandler` only queues each record
(in order, whatever the thread), and a :class:`~logging.handlers.QueueListener`'s thread formats
and writes the lines to stderr in bursts. ``logging.shutdown`` writes what is queued.
"""

from __future__ import annotations

import logging
import logging.handlers
import queue
import sys
import time
from typing import TextIO

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from .logtext import REQUEST_STARTED, log_safe

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
"""The service's log format (``asctime`` with its default ``YYYY-MM-DD HH:MM:SS,mmm``)."""

LINGER_SECONDS = 0.05
"""How long the log listener lets records gather once woken (:class:`LingeringListener`)."""


class LingeringListener(logging.handlers.QueueListener):
    """A :class:`~logging.handlers.QueueListener` that, woken by a record, waits ``linger``
    seconds and then writes every record logged meanwhile: each wake-up costs a futex call, two
    context switches and the GIL handed over and back (docs/benchmarks.md)."""

    def __init__(
        self,
        records: queue.SimpleQueue[logging.LogRecord],
        *handlers: logging.Handler,
        linger: float,
    ) -> None:
        super().__init__(records, *handlers, respect_handler_level=True)
        self._records = records
        self.linger = linger

    def dequeue(self, block: bool) -> logging.LogRecord:
        """The next record; before waiting for one, the burst so far is written out."""
        try:
            return self._records.get_nowait()
        except queue.Empty:
            pass
        self._flush()
        record = self._records.get(block)
        time.sleep(self.linger)
        return record

    def stop(self) -> None:
        """Stop the thread once every record queued so far was handled, and write them."""
        super().stop()
        self._flush()

    def _flush(self) -> None:
        for handler in self.handlers:
            handler.flush()


class BurstWriter(logging.StreamHandler):  # type: ignore[type-arg]
    """A :class:`logging.StreamHandler` that writes a burst's lines in one write at
    :meth:`flush` (or every :attr:`MAX_LINES`), not a system call per line."""

    MAX_LINES = 256

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self._lines: list[str] = []
        self._last: logging.LogRecord | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._lines.append(self.format(record) + self.terminator)
        except Exception:
            self.handleError(record)
            return
        self._last = record
        if len(self._lines) >= self.MAX_LINES:
            self.flush()

    def flush(self) -> None:
        self.acquire()
        try:
            if self._lines:
                text = "".join(self._lines)
                self._lines.clear()
                try:
                    self.stream.write(text)
                except Exception:
                    self.handleError(self._last)  # type: ignore[arg-type]
            super().flush()
        finally:
            self.release()


class ServiceFormatter(logging.Formatter):
    """:data:`LOG_FORMAT`, with the standard time stamp's seconds (``time.strftime``, a third of
    what formatting a line costs) made once a second."""

    def __init__(self) -> None:
        super().__init__(LOG_FORMAT)
        self._second: int | None = None
        self._stamp = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt is not None or self.default_msec_format is None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._stamp = time.strftime(self.default_time_format, self.converter(second))
            self._second = second
        return self.default_msec_format % (self._stamp, record.msecs)

    def format(self, record: logging.LogRecord) -> str:
        """:data:`LOG_FORMAT`'s line, made directly for a record without exception or stack
        text (every access line): the base class's steps for it (whether the format uses
        the time, the format's ``%`` over the record's dictionary) cost as much as the rest of
        the line's formatting (docs/benchmarks.md). Anything else as the base class does."""
        if record.exc_info or record.exc_text or record.stack_info:
            return super().format(record)
        record.message = message = record.getMessage()
        record.asctime = asctime = self.formatTime(record)
        return f"{asctime} {record.levelname!s} {record.name!s} {message}"


class ServiceLogHandler(logging.handlers.QueueHandler):
    """Queues the records for a listener thread that writes them to ``stream`` until closed."""

    def __init__(self, stream: TextIO, *, linger: float = LINGER_SECONDS) -> None:
        writer = BurstWriter(stream)
        writer.setFormatter(ServiceFormatter())
        # Made after its writer: logging.shutdown closes the handlers newest first, so this one
        # (whose close writes what is queued) before the writer.
        records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        super().__init__(records)
        self.listener = LingeringListener(records, writer, linger=linger)
        self.listener.start()
        self._listening = True

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        """The record itself, its message merged with its arguments now (they may change); not
        formatted and copied as the base class does for another process (twice the cost)."""
        if record.args:
            record.msg = record.getMessage()
            record.args = None
        return record

    def close(self) -> None:
        """Write every record queued so far and stop the listener."""
        try:
            if self._listening:  # the listener may be stopped once only
                self._listening = False
                self.listener.stop()
        finally:
            super().close()


def install_service_handler(level: int = logging.INFO) -> None:
    """A :class:`ServiceLogHandler` to stderr on the root logger, unless it has handlers."""
    root = logging.getLogger()
    if root.handlers:
        return
    root.addHandler(ServiceLogHandler(sys.stderr))
    root.setLevel(level)
    # LOG_FORMAT shows no thread, process or source location: not gathered (logging HOWTO,
    # "Optimization").
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None


class AccessLogger(AbstractAccessLogger):
    """One INFO record per request, its message made whole here."""

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)

    def log(self, request: web.BaseRequest, response: web.StreamResponse, seconds: float) -> None:
        """``REMOTE METHOD PATH STATUS DURATIONms``, the duration from when the error handling
        began with the request, else aiohttp's ``seconds`` (whole milliseconds under uvloop)."""
        started = request.get(REQUEST_STARTED)
        if started is not None:
            seconds = time.perf_counter() - started
        remote = request.remote
        self.logger.info(
            f"{log_safe(remote) if remote is not None else None} {log_safe(request.method)} "
            f"{log_safe(request.path)} {response.status} {seconds * 1000:.1f}ms"
        )
