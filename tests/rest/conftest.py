"""Fixtures for the REST layer's HTTP tests: a real aiohttp app of an :class:`Api` on loopback."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints.rest import Api

Serve = Callable[..., Awaitable[TestClient[web.Request, web.Application]]]


@pytest.fixture
def serve(aiohttp_client: Any) -> Serve:
    """``await serve(api)``: a test client talking HTTP to ``api.app()`` (given the
    ``middlewares`` and ``tracer``, if any)."""

    async def start(
        api: Api, *, middlewares: Iterable[Any] = (), tracer: Any = None
    ) -> TestClient[web.Request, web.Application]:
        client: TestClient[web.Request, web.Application] = await aiohttp_client(
            api.app(middlewares=middlewares, tracer=tracer)
        )
        return client

    return start
