"""The message format shared by the networked channels: the session ids, comma-separated
(ids are hex; a PostgreSQL NOTIFY payload holds up to 8,000 bytes, so long lists are split)."""

from __future__ import annotations

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


class Subscribers:
    """The subscribers of a networked channel, each told every revocation heard."""

    def __init__(self) -> None:
        self._subscribers: list[OnRevoked] = []

    def subscribe(self, on_revoked: OnRevoked) -> None:
        self._subscribers.append(on_revoked)

    def deliver(self, session_ids: list[str]) -> None:
        for on_revoked in self._subscribers:
            try:
                on_revoked(session_ids)
            except Exception:
                log.exception("a revocation subscriber failed")
