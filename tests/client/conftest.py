"""Fixtures: one real ``authgate serve`` per module (the rotation tests start their own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.client.support import Authgate


@pytest.fixture(scope="module")
def authgate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Authgate]:
    service = Authgate(tmp_path_factory.mktemp("authgate"))
    service.start()
    try:
        yield service
    finally:
        service.stop()
