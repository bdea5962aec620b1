"""The service's log formatter writes exactly what logging.Formatter writes, with its time
stamp made once a second (src/entrypoints/rest/accesslog.py)."""

from __future__ import annotations

import logging
import time

from authgate.entrypoints.rest.accesslog import LOG_FORMAT, _ServiceFormatter


def _record(created: float) -> logging.LogRecord:
    record = logging.LogRecord("authgate.audit", logging.INFO, __file__, 1, "x=%s", ("y",), None)
    record.created = created
    record.msecs = (created - int(created)) * 1000
    return record


def test_same_text_as_logging_across_seconds_and_milliseconds() -> None:
    ours, theirs = _ServiceFormatter(LOG_FORMAT), logging.Formatter(LOG_FORMAT)
    base = 1_790_000_000.0
    # within a second, across a second, back to an earlier second, the last millisecond
    for created in (base + 0.001, base + 0.5, base + 0.999, base + 1.0, base + 0.25, base + 3.9995):
        record = _record(created)
        assert ours.format(record) == theirs.format(_record(created))
        assert ours.format(record).endswith("INFO authgate.audit x=y")


def test_a_changed_converter_or_format_is_honoured() -> None:
    ours, theirs = _ServiceFormatter(LOG_FORMAT), logging.Formatter(LOG_FORMAT)
    created = 1_790_000_000.123
    assert ours.format(_record(created)) == theirs.format(_record(created))
    ours.converter = theirs.converter = time.gmtime  # type: ignore[method-assign,assignment]
    assert ours.format(_record(created)) == theirs.format(_record(created))
    ours.default_msec_format = theirs.default_msec_format = None
    assert ours.format(_record(created)) == theirs.format(_record(created))
    assert ours.formatTime(_record(created), "%Y") == theirs.formatTime(_record(created), "%Y")
