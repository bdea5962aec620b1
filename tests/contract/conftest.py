"""Each contract suite runs once per adapter: the fixture ``store`` is parametrized by kind,
PostgreSQL's twice (on our pool and on asyncpg's).

The PostgreSQL fixtures come from the plugin ``tests.support.postgres`` (tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.stores import WITH_ASYNCPG_POOL, Store, open_store


@pytest.fixture(params=WITH_ASYNCPG_POOL)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh, empty store of each kind (PostgreSQL: the run's database, tables emptied)."""
    postgres = request.param.startswith("postgres")
    url = request.getfixturevalue("clean_postgres_url") if postgres else None
    opened = await open_store(request.param, sqlite_path=tmp_path / "authgate.db", postgres_url=url)
    try:
        yield opened
    finally:
        await opened.close()
