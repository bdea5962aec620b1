"""The direct access-log writer batches the handler's other INFO records too, in order."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
from collections.abc import Iterator

import pytest

from authgate.entrypoints.rest.accesslog import LOG_FORMAT, BufferedAccessLog


@pytest.fixture
def logged() -> Iterator[tuple[io.StringIO, logging.StreamHandler[io.StringIO], logging.Logger]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logger = logging.getLogger("test.batch.audit")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield stream, handler, logger
    logger.removeHandler(handler)


def _names(text: str) -> list[str]:
    return [line.split(" ", 4)[-1] for line in text.splitlines()]


async def test_info_records_on_the_loop_join_the_batch_in_order(
    logged: tuple[io.StringIO, logging.StreamHandler[io.StringIO], logging.Logger],
) -> None:
    stream, handler, logger = logged
    sink = BufferedAccessLog(handler, "authgate.access", flush_seconds=0.05)
    try:
        sink.write("access one")
        logger.info("audit %s", "event")
        sink.write("access two")
        assert stream.getvalue() == ""  # nothing written yet: one batch
        await asyncio.sleep(0.2)
        assert _names(stream.getvalue()) == ["access one", "audit event", "access two"]
        first = stream.getvalue().splitlines()[1]
        assert " INFO test.batch.audit audit event" in first  # the handler's own format
    finally:
        sink.close()


async def test_an_info_record_alone_is_batched_and_written_when_due(
    logged: tuple[io.StringIO, logging.StreamHandler[io.StringIO], logging.Logger],
) -> None:
    stream, handler, logger = logged
    sink = BufferedAccessLog(handler, "authgate.access", flush_seconds=0.05)
    try:
        logger.info("sign-in event")
        assert stream.getvalue() == ""
        await asyncio.sleep(0.2)
        assert _names(stream.getvalue()) == ["sign-in event"]
    finally:
        sink.close()


async def test_a_warning_is_written_at_once_after_the_pending_lines(
    logged: tuple[io.StringIO, logging.StreamHandler[io.StringIO], logging.Logger],
) -> None:
    stream, handler, logger = logged
    sink = BufferedAccessLog(handler, "authgate.access", flush_seconds=60)
    try:
        sink.write("access one")
        logger.info("audit")
        logger.warning("security event")
        assert _names(stream.getvalue()) == ["access one", "audit", "security event"]
    finally:
        sink.close()


async def test_a_record_of_another_thread_is_written_at_once(
    logged: tuple[io.StringIO, logging.StreamHandler[io.StringIO], logging.Logger],
) -> None:
    stream, handler, logger = logged
    sink = BufferedAccessLog(handler, "authgate.access", flush_seconds=60)
    try:
        sink.write("access one")
        worker = threading.Thread(target=logger.info, args=("from a worker",))
        worker.start()
        worker.join()
        assert _names(stream.getvalue()) == ["access one", "from a worker"]
    finally:
        sink.close()


async def test_after_close_records_are_written_at_once(
    logged: tuple[io.StringIO, logging.StreamHandler[io.StringIO], logging.Logger],
) -> None:
    stream, handler, logger = logged
    sink = BufferedAccessLog(handler, "authgate.access", flush_seconds=60)
    sink.write("access one")
    sink.close()
    logger.info("stopped")
    assert _names(stream.getvalue()) == ["access one", "stopped"]
