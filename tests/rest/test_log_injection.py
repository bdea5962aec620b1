"""Request values in log lines are escaped: a decoded ``%0A`` cannot forge a line."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from authgate.entrypoints.rest import Api, Call, log_safe
from authgate.entrypoints.rest.serving import AccessLogger
from tests.support.waiting import eventually

from .conftest import Serve

FORGED_PATH = "/boom/a%0A2030-01-01%20INFO%20authgate.access%20forged%1B[2J%E2%80%A8x"
ESCAPED_PATH = "/boom/a\\n2030-01-01 INFO authgate.access forged\\x1b[2J\\u2028x"


def raising_api() -> Api:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/boom/{x}")
    async def boom(call: Call[None]) -> None:
        raise RuntimeError("the operation failed")

    return api


def one_line(record: logging.LogRecord) -> str:
    message = record.getMessage()
    assert message.isprintable(), repr(message)
    return message


async def test_the_500_log_escapes_the_path(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    client = await serve(raising_api())
    with caplog.at_level(logging.ERROR, logger="authgate.rest"):
        resp = await client.get(FORGED_PATH)
    assert resp.status == 500
    (record,) = [r for r in caplog.records if r.name == "authgate.rest"]
    assert one_line(record) == f"unhandled error in GET {ESCAPED_PATH}"


async def test_the_access_log_escapes_the_path(
    aiohttp_server: Any, aiohttp_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = await aiohttp_server(
        raising_api().app(),
        access_log_class=AccessLogger,
        access_log=logging.getLogger("authgate.access"),
    )
    client = await aiohttp_client(server)
    with caplog.at_level(logging.INFO, logger="authgate.access"):
        assert (await client.get(FORGED_PATH)).status == 500
        await eventually(  # the line is written once the response is out
            lambda: any(r.name == "authgate.access" for r in caplog.records),
            what="the access log line",
        )
    (record,) = [r for r in caplog.records if r.name == "authgate.access"]
    assert f" GET {ESCAPED_PATH} 500 " in one_line(record)


@pytest.mark.parametrize(
    ("value", "logged"),
    [
        ("/plain/path-1", "/plain/path-1"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x00\x1b\x7f", "\\x00\\x1b\\x7f"),
        ("\x85\x9f", "\\x85\\x9f"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        ("\udcff", "\\udcff"),
        ("a\\nb", "a\\\\nb"),  # a literal backslash is escaped too: an escape is never ambiguous
        ("é ü 日本", "é ü 日本"),
    ],
)
def test_log_safe(value: str, logged: str) -> None:
    assert log_safe(value) == logged
