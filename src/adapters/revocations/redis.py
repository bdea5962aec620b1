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

# After a lost connection: the first retry at once plus this, doubling up to the cap, so an
# outage costs Redis (and the log) little while a short blip is followed within a second.
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0


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
        delay = RETRY_FIRST_SECONDS
        lost = False  # logged once per outage, and its end once
        while True:
            try:
                async with self._redis.pubsub() as pubsub:
                    await pubsub.subscribe(CHANNEL)
                    self._subscribed.set()
                    delay = RETRY_FIRST_SECONDS
                    if lost:
                        lost = False
                        log.warning("session revocation channel (Redis) back")
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
                if not lost:
                    lost = True
                    log.warning(
                        "session revocation channel (Redis) lost (%s: %s); retrying every %g s "
                        "at most (other instances' revocations reach this one within "
                        "session.revocation_cache_seconds meanwhile)",
                        type(e).__name__,
                        e,
                        RETRY_MAX_SECONDS,
                    )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await self._redis.aclose()
