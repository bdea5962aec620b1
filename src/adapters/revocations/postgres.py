"""Revocations over PostgreSQL LISTEN/NOTIFY (when there is no Redis)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

import asyncpg

from .messages import CHANNEL, NetworkedChannel, decode

log = logging.getLogger("authgate.sessions")

RETRY_SECONDS = 1.0


class Executes(Protocol):
    """What the channel needs of the store's pool: one statement at a time."""

    async def execute(self, query: str, *args: object) -> str: ...


class PostgresRevocations(NetworkedChannel):
    """Revocations on PostgreSQL: ``NOTIFY`` through the pool, ``LISTEN`` on a dedicated
    connection that is re-opened after a failure."""

    TASK_NAME = "revocations-postgres"

    def __init__(self, pool: Executes, url: str) -> None:
        super().__init__()
        self._pool = pool
        self._url = url

    async def _send(self, payload: str) -> None:
        await self._pool.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)

    async def _listen(self) -> None:
        def deliver(_conn: Any, _pid: int, _channel: str, payload: object) -> None:
            self.deliver(decode(str(payload)))

        while True:
            conn: asyncpg.Connection | None = None
            try:
                conn = await asyncpg.connect(self._url, timeout=5.0)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _conn, lost=lost: lost.set())
                await conn.add_listener(CHANNEL, deliver)
                self._listening.set()
                while not lost.is_set():
                    # A periodic round trip notices a silently dropped connection.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(lost.wait(), 10.0)
                    if not lost.is_set():
                        await conn.execute("SELECT 1", timeout=5.0)
                raise ConnectionError("the listening connection was closed")
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._listening.clear()
                log.warning(
                    "session revocation channel (PostgreSQL) lost (%s: %s); retrying",
                    type(e).__name__,
                    e,
                )
                await asyncio.sleep(RETRY_SECONDS)
            finally:
                if conn is not None and not conn.is_closed():
                    with contextlib.suppress(Exception):
                        await conn.close(timeout=2.0)
