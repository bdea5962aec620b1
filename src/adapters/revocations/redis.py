"""Revocations over Redis pub/sub (the store of the shared rate limits)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

import redis.asyncio as aioredis

from authgate.ports.revocations import OnRevoked

from .messages import CHANNEL, Subscribers, decode, encode

log = logging.getLogger("authgate.sessions")

RETRY_SECONDS = 1.0


class RedisRevocations:
    """:class:`~authgate.ports.revocations.RevocationChannel` on a Redis server: one
    subscription task per instance, re-subscribing after a lost connection."""

    def __init__(self, url: str) -> None:
        self._redis = aioredis.Redis.from_url(
            url, socket_timeout=2.0, socket_connect_timeout=1.0, health_check_interval=10
        )
        self._task: asyncio.Task[None] | None = None
        self._subscribers = Subscribers()
        self._subscribed = asyncio.Event()

    async def publish(self, session_ids: Sequence[str]) -> None:
        try:
            for payload in encode(session_ids):
                await self._redis.publish(CHANNEL, payload)
        except Exception as e:  # the cache lifetime bounds what a lost message costs
            log.warning("could not publish a session revocation (%s: %s)", type(e).__name__, e)

    def subscribe(self, on_revoked: OnRevoked) -> None:
        self._subscribers.subscribe(on_revoked)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="revocations-redis")
        # Wait briefly for the subscription, so a revocation right after start-up is heard;
        # an unreachable Redis does not hold start-up up.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._subscribed.wait(), 2.0)

    async def _listen(self) -> None:
        while True:
            try:
                async with self._redis.pubsub() as pubsub:
                    await pubsub.subscribe(CHANNEL)
                    self._subscribed.set()
                    while True:
                        message = await pubsub.get_message(
                            ignore_subscribe_messages=True, timeout=5.0
                        )
                        if message is not None and message.get("type") == "message":
                            self._subscribers.deliver(decode(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._subscribed.clear()
                log.warning(
                    "session revocation channel (Redis) lost (%s: %s); retrying",
                    type(e).__name__,
                    e,
                )
                await asyncio.sleep(RETRY_SECONDS)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await self._redis.aclose()
