"""Pending sign-ins in memory (single instance only: a second instance cannot see them)."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import PendingSignIn
from authgate.ports.state import StateStoreFull

_Key = tuple[str, str, str]  # provider, state, binding hash


class MemoryStates:
    """:class:`~authgate.ports.state.StateStore` in a dict, bounded by ``max_entries``.

    Entries are kept in insertion order, which is expiry order (one lifetime for all), so a
    full store drops expired entries from the front and then refuses the new one: live sign-ins
    of real users are never evicted to make room, and a flood costs O(1) per refused entry.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self._entries: dict[_Key, PendingSignIn] = {}
        # (provider, state) -> binding hashes, for the take without a binding cookie.
        self._browsers: dict[tuple[str, str], dict[str, None]] = {}
        self._max = max_entries

    async def put(self, pending: PendingSignIn) -> None:
        key = (pending.provider, pending.state, pending.binding_hash)
        replaced = self._drop(key)
        if replaced is None and len(self._entries) >= self._max:
            self._drop_expired_front(pending.created_at)
            if len(self._entries) >= self._max:
                raise StateStoreFull(f"{self._max} pending sign-ins")
        self._entries[key] = pending
        self._browsers.setdefault(key[:2], {})[pending.binding_hash] = None

    async def take(
        self, provider: str, state: str, binding_hash: str | None, now: dt.datetime
    ) -> PendingSignIn | None:
        if binding_hash is None:
            browsers = self._browsers.get((provider, state), {})
            live = [
                p for b in browsers if (p := self._entries[(provider, state, b)]).expires_at > now
            ]
            if not live:
                return None
            binding_hash = max(live, key=lambda p: p.created_at).binding_hash
        pending = self._drop((provider, state, binding_hash))
        if pending is None or pending.expires_at <= now:
            return None
        return pending

    async def purge_expired(self, now: dt.datetime) -> int:
        expired = [k for k, v in self._entries.items() if v.expires_at <= now]
        for k in expired:
            self._drop(k)
        return len(expired)

    def _drop(self, key: _Key) -> PendingSignIn | None:
        pending = self._entries.pop(key, None)
        if pending is not None:
            browsers = self._browsers[key[:2]]
            del browsers[key[2]]
            if not browsers:
                del self._browsers[key[:2]]
        return pending

    def _drop_expired_front(self, now: dt.datetime) -> None:
        while self._entries:
            key = next(iter(self._entries))
            if self._entries[key].expires_at > now:
                return
            self._drop(key)
