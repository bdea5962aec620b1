"""The access log: one line per request, cheap enough to leave on.

Each line names the client's address, the method, the path (never the query string: it carries
codes and states), the status and the duration; no headers, so no credentials. The request's
values are :func:`~.logtext.log_safe`: a decoded ``%0A`` in a path cannot start a forged line.
In the service's log format (:data:`LOG_FORMAT`) a line reads::

    2026-11-23 12:00:00,123 INFO authgate.access 127.0.0.1 GET /v1/account/providers 200 1.4ms

It is written one of two ways, chosen once when serving starts (:func:`access_logger_class`):

* **Directly** (:class:`BufferedAccessLog`), when the ``authgate.access`` logger's lines would
  end at the service's own handler (:func:`install_service_handler`, which ``authgate serve``
  installs on stderr) and nowhere else, unchanged by any filter or other format. The line is
  formatted here, character for character as ``logging`` would format it, without a
  ``LogRecord``, and kept in a buffer that is written in one piece: ``FLUSH_SECONDS`` after its
  first line, once it holds ``MAX_PENDING_LINES``, before any WARNING or worse record the same
  handler writes (so the log keeps its order), and when serving stops (SIGTERM or SIGINT
  included). A line costs a few microseconds instead of the ~40 of a record through
  ``logging``. The handler's other INFO records logged on the event loop (a sign-in's audit
  line, say) join the same batch, formatted by the handler, instead of costing a write each;
  warnings, errors and records of other threads are written at once.
* **Through logging** (:class:`AccessLogger`), whenever the logging configuration is anything
  else (an application that embeds the server and sends ``authgate.access`` to a file, a
  collector or another format): a record per request, as before, so that configuration applies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import ClassVar, TextIO

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from .logtext import REQUEST_STARTED, log_safe

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
"""The service's log format (``asctime`` with its default ``YYYY-MM-DD HH:MM:SS,mmm``)."""

FLUSH_SECONDS = 0.1
"""How long a line may wait in the buffer of the direct writer (a process killed with SIGKILL
loses at most the lines of this last moment; a clean stop loses none)."""
MAX_PENDING_LINES = 1024

# The handler and formatter install_service_handler() put on the root logger: the direct writer
# applies only while they are the whole configuration that the access lines go through.
_service: tuple[logging.StreamHandler[TextIO], logging.Formatter] | None = None


def install_service_handler(level: int = logging.INFO) -> None:
    """Log to stderr in :data:`LOG_FORMAT` (``logging.basicConfig``: nothing changes when the
    root logger already has handlers, that is when logging was configured otherwise)."""
    global _service
    if logging.getLogger().handlers:
        return
    handler: logging.StreamHandler[TextIO] = logging.StreamHandler(sys.stderr)
    formatter = _ServiceFormatter(LOG_FORMAT)
    handler.setFormatter(formatter)
    logging.basicConfig(level=level, handlers=[handler])
    _service = (handler, formatter)
    # LOG_FORMAT shows no thread, process or source location: not gathered for every record
    # (the logging HOWTO's "Optimization"; an application that configures logging itself,
    # and so may show them, returned above).
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None


class _ServiceFormatter(logging.Formatter):
    """:class:`logging.Formatter` whose ``asctime`` is made once a second: the same text
    (``time.strftime`` of the local time, then ``,mmm``), without a ``localtime`` and a
    ``strftime`` for every record (a sign-in's audit line is one)."""

    def __init__(self, fmt: str) -> None:
        super().__init__(fmt)
        self._second: int | None = None
        self._converter: object = None
        self._stamp = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        converter = self.converter
        if second != self._second or converter is not self._converter:
            self._stamp = time.strftime(self.default_time_format, converter(record.created))
            self._second, self._converter = second, converter
        msec_format = self.default_msec_format
        return msec_format % (self._stamp, record.msecs) if msec_format else self._stamp


def access_message(request: web.BaseRequest, response: web.StreamResponse, seconds: float) -> str:
    """The message of a request's line: ``REMOTE METHOD PATH STATUS DURATIONms``, the request's
    values :func:`log_safe`. The duration is measured from when the error handling began with
    the request (``time.perf_counter``), else (a request aiohttp refused before that) it is
    aiohttp's ``seconds``, which under uvloop counts whole milliseconds."""
    started = request.get(REQUEST_STARTED)
    if started is not None:
        seconds = time.perf_counter() - started
    remote = request.remote
    return (
        f"{log_safe(remote) if remote is not None else None} {log_safe(request.method)} "
        f"{log_safe(request.path)} {response.status} {seconds * 1000:.1f}ms"
    )


class AccessLogger(AbstractAccessLogger):
    """The access log through ``logging``: one record per request on the given logger."""

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info("%s", access_message(request, response, time))


class BufferedAccessLog:
    """Access lines formatted here and written to ``handler``'s stream in batches.

    :meth:`write` runs on the event loop's thread; :meth:`flush` may run on any thread (a
    record logged by a worker thread flushes the pending lines first) and writes under the
    handler's lock, as ``logging`` does. A stream that fails (a closed pipe) loses that batch,
    not the service: the failure is reported once on ``sys.stderr`` if it can be.
    """

    def __init__(
        self,
        handler: logging.StreamHandler[TextIO],
        name: str,
        *,
        flush_seconds: float = FLUSH_SECONDS,
        max_pending: int = MAX_PENDING_LINES,
    ) -> None:
        self._handler = handler
        self._level_and_name = f" {logging.getLevelName(logging.INFO)} {name} "
        self._flush_seconds = flush_seconds
        self._max_pending = max_pending
        self._pending: list[str] = []
        self._lock = threading.Lock()
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        self._second = -1
        self._stamp = ""
        self._failed = False
        self.lost = 0  # lines a failing stream did not take
        # write_info's loggers: their " INFO name " part, or "" when their lines go elsewhere
        self._others: dict[str, str] = {}
        handler.addFilter(self._before_other_record)

    def write(self, message: str) -> None:
        """Add a line (on the event loop's thread)."""
        self._write(self._level_and_name, message, asyncio.get_running_loop())

    def write_info(self, logger: logging.Logger, message: str) -> bool:
        """Add an INFO line of another logger, ``message`` already formatted, when that
        logger's INFO records would reach this writer's handler and no other (see
        :func:`direct_handler`) and the caller runs on the event loop: the line ``logging``
        would write, without a ``LogRecord``. False (nothing written) otherwise: the caller
        logs the record itself."""
        level_and_name = self._others.get(logger.name)
        if level_and_name is None:
            reaches = direct_handler(logger, own=self._before_other_record) is self._handler
            level_and_name = self._others[logger.name] = f" INFO {logger.name} " if reaches else ""
        if not level_and_name or self._closed:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another thread
            return False
        self._write(level_and_name, message, loop)
        return True

    def _write(self, level_and_name: str, message: str, loop: asyncio.AbstractEventLoop) -> None:
        now = time.time()
        second = int(now)
        if second != self._second:  # logging.Formatter.formatTime, once a second
            self._stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
            self._second = second
        # LogRecord.msecs and Formatter.default_msec_format: ",%03d" of the truncated ms
        self._add(
            f"{self._stamp},{int((now - second) * 1000):03d}{level_and_name}{message}\n", loop
        )

    def _add(self, line: str, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            self._pending.append(line)
            pending = len(self._pending)
        if pending >= self._max_pending:
            self.flush()
        elif self._timer is None:
            self._timer = loop.call_later(self._flush_seconds, self._due)

    def _due(self) -> None:
        self._timer = None
        self.flush()

    def _before_other_record(self, record: logging.LogRecord) -> bool:
        # A filter of the handler. An INFO (or DEBUG) record logged on the event loop joins the
        # batch, formatted by the handler as it would have written it (a sign-in's audit line
        # then costs no write of its own); any other record, and every record once the writer
        # is closed, is written at once after the lines before it.
        if record.levelno < logging.WARNING and not self._closed:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # another thread: written at once
                loop = None
            if loop is not None:
                try:
                    line = self._handler.format(record) + self._handler.terminator
                except Exception:
                    return True  # the handler reports its own formatting failures
                self._add(line, loop)
                return False  # written with the batch
        self.flush()
        return True

    def flush(self) -> None:
        """Write the pending lines now, in one piece."""
        handler = self._handler
        handler.acquire()
        try:
            with self._lock:
                lines, self._pending = self._pending, []
            if not lines:
                return
            try:
                handler.stream.write("".join(lines))
                handler.stream.flush()
            except Exception as e:  # a log that cannot be written must not stop serving
                self._report(e, len(lines))
        finally:
            handler.release()

    def _report(self, error: Exception, lines: int) -> None:
        self.lost += lines
        if self._failed:
            return
        self._failed = True
        with contextlib.suppress(Exception):  # stderr itself may be what failed
            sys.stderr.write(f"--- the access log could not be written ({error!r}); lines lost\n")

    def close(self) -> None:
        """Write what is pending and stop; later lines are written at once (none are expected)."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._handler.removeFilter(self._before_other_record)
        self.flush()
        self._max_pending = 1
        global _active
        if _active is self:
            _active = None


class _BufferedAccessLogger(AbstractAccessLogger):
    """aiohttp's access logger (one per connection), writing to its class's sink."""

    sink: ClassVar[BufferedAccessLog]

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.sink.write(access_message(request, response, time))


def direct_handler(
    logger: logging.Logger, own: Callable[[logging.LogRecord], bool] | None = None
) -> logging.StreamHandler[TextIO] | None:
    """The service's own handler, when the INFO records of ``logger`` would reach it and no
    other handler, through no filter (but ``own``, the direct writer's), in its format: then a
    line written directly to its stream is exactly what ``logging`` would write. None
    otherwise."""
    if _service is None or not logger.isEnabledFor(logging.INFO):
        return None
    handler, formatter = _service
    reached: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters:
            return None
        reached.extend(current.handlers)
        if not current.propagate:
            break
        current = current.parent
    filters = [f for f in handler.filters if f != own]
    if reached != [handler] or filters or handler.formatter is not formatter:
        return None
    if handler.level > logging.INFO or formatter.converter is not time.localtime:
        return None
    return handler


_active: BufferedAccessLog | None = None


def write_info(logger: logging.Logger, message: str) -> bool:
    """Write ``message`` (formatted) as an INFO line of ``logger`` through the serving direct
    writer (:meth:`BufferedAccessLog.write_info`); False when there is none or it does not
    apply, and the caller logs the record through ``logging``. An application's own lines
    logged on every request (the sign-in's audit line) are then as cheap as an access line."""
    sink = _active
    return sink is not None and sink.write_info(logger, message)


def access_logger_class(
    logger: logging.Logger,
) -> tuple[type[AbstractAccessLogger], BufferedAccessLog | None]:
    """The access logger class aiohttp should use for ``logger``, and the direct writer it
    writes to (None when the lines go through ``logging``); the caller closes the writer when
    serving stops."""
    handler = direct_handler(logger)
    if handler is None:
        return AccessLogger, None
    global _active
    sink = _active = BufferedAccessLog(handler, logger.name)

    class Direct(_BufferedAccessLogger):
        pass

    Direct.sink = sink
    return Direct, sink
