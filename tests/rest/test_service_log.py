"""The service's log handler (a queue on the logging side, a thread writing): the lines logging
itself would write, in the order logged, every one of them written by the time it closes."""

from __future__ import annotations

import io
import logging
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from authgate.entrypoints.rest.accesslog import (
    LOG_FORMAT,
    BurstWriter,
    ServiceFormatter,
    ServiceLogHandler,
    install_service_handler,
)

STAMP_LENGTH = len("2026-11-23 12:00:00,123")


@pytest.fixture
def service_log() -> Iterator[tuple[io.StringIO, ServiceLogHandler, logging.Logger]]:
    """A logger of its own whose only handler is a ServiceLogHandler writing to a string."""
    stream = io.StringIO()
    handler = ServiceLogHandler(stream)
    logger = logging.getLogger("test.servicelog")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield stream, handler, logger
    finally:
        logger.removeHandler(handler)
        handler.close()


def messages(text: str) -> list[str]:
    return [line.split(" ", 4)[-1] for line in text.splitlines()]


def log_some(logger: logging.Logger) -> None:
    logger.info("access %s %d", "GET /", 200)
    logger.warning("a warning with a %% sign")
    logger.info("percent in an argument: %s", "100%")
    logger.debug("debug")
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed %s", "here")
    logger.info("the end")


def test_lines_are_what_a_stream_handler_writes(
    service_log: tuple[io.StringIO, ServiceLogHandler, logging.Logger],
) -> None:
    stream, handler, logger = service_log
    log_some(logger)
    handler.close()

    expected = io.StringIO()
    plain = logging.StreamHandler(expected)
    plain.setFormatter(logging.Formatter(LOG_FORMAT))
    reference = logging.getLogger("test.servicelog.reference")
    reference.propagate = False
    reference.setLevel(logging.DEBUG)
    reference.addHandler(plain)
    try:
        log_some(reference)
    finally:
        reference.removeHandler(plain)

    def without_stamps(text: str, name: str) -> list[str]:
        return [
            line[STAMP_LENGTH:].replace(name, "NAME") if line[:4].isdigit() else line
            for line in text.splitlines()
        ]

    ours = without_stamps(stream.getvalue(), "test.servicelog")
    theirs = without_stamps(expected.getvalue(), "test.servicelog.reference")
    assert ours == theirs
    assert " INFO NAME access GET / 200" in ours
    assert "ValueError: boom" in ours


def test_arguments_are_taken_when_logged_not_when_written(
    service_log: tuple[io.StringIO, ServiceLogHandler, logging.Logger],
) -> None:
    # The line is formatted later, on the listener's thread: what it shows of a mutable
    # argument is its value at the call.
    stream, handler, logger = service_log
    items = ["first"]
    logger.info("items %s", items)
    items.append("second")
    handler.close()
    assert messages(stream.getvalue()) == ["items ['first']"]


def test_every_thread_in_the_order_logged(
    service_log: tuple[io.StringIO, ServiceLogHandler, logging.Logger],
) -> None:
    stream, handler, logger = service_log
    logger.info("one")
    worker = threading.Thread(target=logger.warning, args=("two, from another thread",))
    worker.start()
    worker.join()
    logger.info("three")
    handler.close()
    assert messages(stream.getvalue()) == ["one", "two, from another thread", "three"]


def test_close_writes_every_queued_record(
    service_log: tuple[io.StringIO, ServiceLogHandler, logging.Logger],
) -> None:
    stream, handler, logger = service_log
    for n in range(2000):
        logger.info("line %d", n)
    handler.close()  # as logging.shutdown does at exit
    assert messages(stream.getvalue()) == [f"line {n}" for n in range(2000)]
    handler.close()  # a second close is harmless


def test_a_logging_configuration_is_left_as_it_is() -> None:
    # pytest's own capture handlers are on the root logger here: logging is configured.
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    assert before[0]
    install_service_handler()
    assert (list(root.handlers), root.level) == before
    assert not any(isinstance(h, ServiceLogHandler) for h in root.handlers)


def test_a_record_wakes_the_writer_once_for_what_is_logged_meanwhile() -> None:
    """The listener lingers once woken: a record is written ``linger`` after it was logged,
    together with every record logged meanwhile (one wake-up for all of them)."""
    stream = io.StringIO()
    handler = ServiceLogHandler(stream, linger=0.3)
    logger = logging.getLogger("test.servicelog.linger")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        logger.info("first")
        time.sleep(0.1)
        assert stream.getvalue() == ""  # not yet: the listener lets records gather
        for n in range(50):
            logger.info("then %d", n)
        deadline = time.monotonic() + 5
        while len(stream.getvalue().splitlines()) < 51 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert messages(stream.getvalue()) == ["first", *(f"then {n}" for n in range(50))]
    finally:
        logger.removeHandler(handler)
        handler.close()


def record_at(created: float, message: str = "a line") -> logging.LogRecord:
    record = logging.LogRecord("test.stamps", logging.INFO, __file__, 1, message, None, None)
    record.created = created
    record.msecs = (created - int(created)) * 1000
    return record


def test_the_time_stamp_is_the_standard_formatters() -> None:
    # The service's formatter makes the seconds of the stamp once a second: every line must
    # read as logging.Formatter(LOG_FORMAT) writes it, within a second, across seconds, minutes,
    # days, and when the clock goes back.
    ours = ServiceFormatter()
    standard = logging.Formatter(LOG_FORMAT)
    base = 1_795_000_799.0  # a second before a minute, an hour and (UTC) a day change
    times = [base + step for step in (0, 0.001, 0.5, 0.999, 1.0, 1.25, 61.7, 3600.02, 86_400.9)]
    times += [base + 0.75, base - 30.5, base + 0.4]  # back in time: a new stamp, not the old one
    for created in times:
        record = record_at(created)
        assert ours.format(record) == standard.format(record), created


def test_a_plain_line_made_directly_reads_as_the_standard_formatters() -> None:
    # A record without exception or stack text is formatted without the base class's steps;
    # one with either goes through them: both must read as logging.Formatter(LOG_FORMAT)
    # writes them, and leave the record's message and time stamp as it would.
    try:
        raise ValueError("boom")
    except ValueError:
        failure = logging.LogRecord(
            "t", logging.ERROR, __file__, 1, "failed %s", ("here",), sys.exc_info()
        )
    plain = logging.LogRecord("t.x", logging.WARNING, __file__, 1, "a %s of %d", ("line", 2), None)
    stacked = logging.LogRecord("t", logging.INFO, __file__, 1, "with stack", None, None)
    stacked.stack_info = "Stack (most recent call last):\n  here"
    for record in (plain, failure, stacked):
        ours, theirs = (
            logging.makeLogRecord(record.__dict__),
            logging.makeLogRecord(record.__dict__),
        )
        assert ServiceFormatter().format(ours) == logging.Formatter(LOG_FORMAT).format(theirs)
        assert (ours.message, ours.asctime) == (theirs.message, theirs.asctime)
    assert ServiceFormatter().format(plain).endswith(" WARNING t.x a line of 2")


def test_a_burst_is_written_when_it_ends_in_one_write() -> None:
    class CountingStream(io.StringIO):
        writes = 0

        def write(self, text: str) -> int:
            self.writes += 1
            return super().write(text)

    stream = CountingStream()
    writer = BurstWriter(stream)
    writer.setFormatter(ServiceFormatter())
    for n in range(10):
        writer.handle(record_at(1_795_000_000 + n / 100, f"line {n}"))
    assert stream.getvalue() == ""  # formatted, waiting for the burst's end
    writer.flush()
    assert stream.writes == 1
    assert messages(stream.getvalue()) == [f"line {n}" for n in range(10)]
    writer.flush()  # nothing new: nothing written
    assert stream.writes == 1


def test_a_long_burst_is_written_as_it_reaches_the_bound() -> None:
    stream = io.StringIO()
    writer = BurstWriter(stream)
    writer.setFormatter(ServiceFormatter())
    for n in range(BurstWriter.MAX_LINES + 3):
        writer.handle(record_at(1_795_000_000, f"line {n}"))
    assert len(stream.getvalue().splitlines()) == BurstWriter.MAX_LINES
    writer.flush()
    assert messages(stream.getvalue()) == [f"line {n}" for n in range(BurstWriter.MAX_LINES + 3)]


def test_a_failed_write_is_reported_and_the_next_burst_is_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class FailingOnce(io.StringIO):
        failed = False

        def write(self, text: str) -> int:
            if not self.failed:
                self.failed = True
                raise OSError("disk full")
            return super().write(text)

    stream = FailingOnce()
    writer = BurstWriter(stream)
    writer.setFormatter(ServiceFormatter())
    writer.handle(record_at(1_795_000_000, "lost"))
    writer.flush()  # reported as logging reports a handler's failure, not raised
    assert "--- Logging error ---" in capsys.readouterr().err
    writer.handle(record_at(1_795_000_001, "written"))
    writer.flush()
    assert messages(stream.getvalue()) == ["written"]
