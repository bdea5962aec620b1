"""The access log names method, path and status; never the query string or credentials."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from authgate.entrypoints.rest import Api, Call
from authgate.entrypoints.rest.serving import AccessLogger
from tests.support.waiting import eventually


async def test_access_log_leaves_out_query_and_headers(
    aiohttp_server: Any, aiohttp_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/callback")
    async def callback(call: Call[None]) -> None:
        return None

    server = await aiohttp_server(
        api.app(),
        access_log_class=AccessLogger,
        access_log=logging.getLogger("authgate.access"),
    )
    client = await aiohttp_client(server)
    with caplog.at_level(logging.INFO, logger="authgate.access"):
        resp = await client.get(
            "/callback?code=secretcode&state=secretstate",
            headers={"Authorization": "Bearer secrettoken", "Cookie": "session=secretcookie"},
        )
        assert resp.status == 204
        # The line is written once the response is out: wait for it, not for a fixed time.
        await eventually(
            lambda: any(r.name == "authgate.access" for r in caplog.records),
            what="the access log line",
        )
    (record,) = [r for r in caplog.records if r.name == "authgate.access"]
    message = record.getMessage()
    assert " GET /callback 204 " in message
    assert "secret" not in message
    assert "?" not in message
