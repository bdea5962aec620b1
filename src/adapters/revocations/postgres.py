"""Revocations over PostgreSQL LISTEN/NOTIFY (when there is no Redis)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any, Protocol

import asyncpg

from authgate.ports.revocations import OnRevoked

from .messages import CHANNEL, Subscribers, decode, encode

log = logging.getLogger("authgate.sessions")

RETRY_SECONDS = 1.0


class Executes(Protocol):
    """What the channel needs of the store's pool: one statement at a time."""

    async def execute(self, query: str, *args: object) -> str: ...


class PostgresRevocations:
    """:class:`~authgate.ports.revocations.RevocationChannel` on PostgreSQL: ``NOTIFY`` through
    the pool, ``LISTEN`` on a dedicated connection that is re-opened after a failure."""

    def __init__(self, pool: Executes, url: str) -> None:
        self._pool = pool
        self._url = url
        self._task: asyncio.Task[None] | None = None
        self._subscribers = Subscribers()
        self._listening = asyncio.Event()

    async def publish(self, session_ids: Sequence[str]) -> None:
        try:
            for payload in encode(session_ids):
                await self._pool.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)
        except Exception as e:  # the cache lifetime bounds what a lost message costs
            log.warning("could not publish a session revocation (%s: %s)", type(e).__name__, e)

    def subscribe(self, on_revoked: OnRevoked) -> None:
        self._subscribers.subscribe(on_revoked)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="revocations-postgres")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), 2.0)

    async def _listen(self) -> None:
        def deliver(_conn: Any, _pid: int, _channel: str, payload: object) -> None:
            self._subscribers.deliver(decode(str(payload)))

        while True:
            conn: asyncpg.Connection | None = None
            try:
                conn = await asyncpg.connect(self._url, timeout=5.0)
                lost = asyncio.Event()
                conn.add_termination_listener(_setter(lost))
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

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


def _setter(event: asyncio.Event) -> Any:

    def on_terminated(_conn: Any) -> None:
        event.set()

    return on_terminated
