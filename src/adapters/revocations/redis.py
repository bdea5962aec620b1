"""Revocations over Redis pub/sub (the store of the shared rate limits)."""

from __future__ import annotations

import asyncio
import logging

import redis.asyncio as aioredis

from .messages import CHANNEL, NetworkedChannel, decode

log = logging.getLogger("authgate.sessions")

# After a lost connection: the first retry at once plus this, doubling up to the cap, so an
# outage costs Redis (and the log) little while a short blip is followed within a second.
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0


class RedisRevocations(NetworkedChannel):
    """Revocations on a Redis server: one subscription task per instance, re-subscribing
    after a lost connection."""

    TASK_NAME = "revocations-redis"

    def __init__(self, url: str) -> None:
        super().__init__()
        self._redis = aioredis.Redis.from_url(
            url, socket_timeout=2.0, socket_connect_timeout=1.0, health_check_interval=10
        )

    async def _send(self, payload: str) -> None:
        await self._redis.publish(CHANNEL, payload)

    async def _listen(self) -> None:
        delay = RETRY_FIRST_SECONDS
        lost = False  # logged once per outage, and its end once
        while True:
            try:
                async with self._redis.pubsub() as pubsub:
                    await pubsub.subscribe(CHANNEL)
                    self._listening.set()
                    delay = RETRY_FIRST_SECONDS
                    if lost:
                        lost = False
                        log.warning("session revocation channel (Redis) back")
                    while True:
                        message = await pubsub.get_message(
                            ignore_subscribe_messages=True, timeout=5.0
                        )
                        if message is not None and message.get("type") == "message":
                            self.deliver(decode(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._listening.clear()
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
        await super().close()
        await self._redis.aclose()
