"""The fixtures of the suites that run real ``authgate serve`` processes: the fake identity
provider's, and a Redis of the test's own that it can kill and start again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
from tests.support.redis_server import RedisProcess


@pytest.fixture
def redis() -> Iterator[RedisProcess]:
    process = RedisProcess()
    try:
        process.start()
        yield process
    finally:
        process.close()
