"""pytest fixtures of the fake identity provider.

Use them from a ``conftest.py``::

    from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401

or, in the root ``tests/conftest.py`` only, ``pytest_plugins = ["tests.fakeidp.fixtures"]``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.fakeidp.clock import SettableClock
from tests.fakeidp.server import FakeIdP


@pytest.fixture
def idp_clock() -> SettableClock:
    """The clock shared by the fake provider and the code under test (``advance`` it)."""
    return SettableClock()


@pytest.fixture
async def fake_idp(idp_clock: SettableClock) -> AsyncIterator[FakeIdP]:
    """A started fake identity provider (google, facebook, apple) on loopback."""
    async with FakeIdP(clock=idp_clock) as fake:
        yield fake


@pytest.fixture
async def http_session() -> AsyncIterator[aiohttp.ClientSession]:
    """A client session for the adapters under test (closed after the test)."""
    async with aiohttp.ClientSession() as session:
        yield session
