"""Fixtures of the PostgreSQL storage tests: a store on one pooled connection, and the
statements that connection sends (asyncpg's query logger)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from asyncpg.connection import LoggedQuery

from authgate.adapters.postgres import PostgresStore, open_postgres


@pytest.fixture
async def pg(clean_postgres_url: str, asyncpg_pool: bool) -> AsyncIterator[PostgresStore]:
    store = await open_postgres(clean_postgres_url, 1, 1, 5.0, asyncpg_pool=asyncpg_pool)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def sent(pg: PostgresStore) -> list[str]:
    """The statements sent on the pool's one connection from now on."""
    statements: list[str] = []

    def log(query: LoggedQuery) -> None:
        statements.append(" ".join(query.query.split()))

    async with pg.pool.acquire() as conn:
        conn.add_query_logger(log)
    return statements
