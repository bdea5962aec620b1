"""What the networked channels share: the message format (the session ids, comma-separated;
ids are hex, and a PostgreSQL NOTIFY payload holds up to 8,000 bytes, so long lists are split),
the subscribers and the listening task."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator, Sequence

from authgate.ports.revocations import OnRevoked

log = logging.getLogger("authgate.sessions")

CHANNEL = "authgate_session_revocations"
MAX_PAYLOAD = 7000


def encode(session_ids: Sequence[str]) -> Iterator[str]:
    """Payloads of at most :data:`MAX_PAYLOAD` bytes carrying every id."""
    batch: list[str] = []
    size = 0
    for sid in session_ids:
        if batch and size + len(sid) + 1 > MAX_PAYLOAD:
            yield ",".join(batch)
            batch, size = [], 0
        batch.append(sid)
        size += len(sid) + 1
    if batch:
        yield ",".join(batch)


def decode(payload: str | bytes) -> list[str]:
    text = payload.decode("ascii", "replace") if isinstance(payload, bytes) else payload
    return [sid for sid in text.split(",") if sid]


class NetworkedChannel:
    """A :class:`~authgate.ports.revocations.RevocationChannel` that sends each payload with
    :meth:`_send` and hears them in its :meth:`_listen` task (which sets ``_listening`` once
    it does)."""

    TASK_NAME = "revocations"

    def __init__(self) -> None:
        self._subscribers: list[OnRevoked] = []
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    async def _send(self, payload: str) -> None:
        raise NotImplementedError

    async def _listen(self) -> None:
        raise NotImplementedError

    async def publish(self, session_ids: Sequence[str]) -> None:
        try:
            for payload in encode(session_ids):
                await self._send(payload)
        except Exception as e:  # the cache lifetime bounds what a lost message costs
            log.warning("could not publish a session revocation (%s: %s)", type(e).__name__, e)

    def subscribe(self, on_revoked: OnRevoked) -> None:
        self._subscribers.append(on_revoked)

    def deliver(self, session_ids: list[str]) -> None:
        for on_revoked in self._subscribers:
            try:
                on_revoked(session_ids)
            except Exception:
                log.exception("a revocation subscriber failed")

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name=self.TASK_NAME)
        # Wait briefly for the subscription, so a revocation right after start-up is heard;
        # an unreachable server does not hold start-up up.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), 2.0)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
