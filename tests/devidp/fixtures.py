"""Fixtures: the service with its development identity provider on a real loopback port.

Shared by tests/devidp and tests/lifecycle: ``from tests.devidp.fixtures import
make_dev_service, service``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.devidp.support import Service, StartService, start_service


@pytest.fixture
def make_dev_service(aiohttp_client: Any, tmp_path: Path) -> StartService:
    async def start(overrides: dict[str, Any] | None = None) -> Service:
        return await start_service(aiohttp_client, tmp_path, overrides)

    return start


@pytest.fixture
async def service(make_dev_service: StartService) -> Service:
    return await make_dev_service()
