"""Pending sign-ins and passkey challenges in memory (single instance only: a second instance
cannot see them)."""

from __future__ import annotations

import datetime as dt
from typing import Generic, Protocol, TypeVar

from authgate.domain.model import PendingSignIn
from authgate.domain.passkeys import Ceremony, PasskeyChallenge
from authgate.ports.passkeys import ChallengeStoreFull
from authgate.ports.state import StateStoreFull


class _Expiring(Protocol):
    @property
    def expires_at(self) -> dt.datetime: ...


K = TypeVar("K")
V = TypeVar("V", bound=_Expiring)


class Bounded(Generic[K, V]):
    """Entries in a dict bounded by ``max_entries``. Insertion order is expiry order (one
    lifetime for all; a replaced entry moves to the end), so a full store drops expired entries
    from the front and then refuses the new one: live entries (real users' sign-ins) are never
    evicted to make room, and a flood costs O(1) per refused entry."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._entries: dict[K, V] = {}
        self._max = max_entries

    def _drop(self, key: K) -> V | None:
        return self._entries.pop(key, None)

    def _admit(self, key: K, value: V, now: dt.datetime) -> bool:
        """Put ``value`` at ``key``, unless the store is full of live entries (False)."""
        if self._drop(key) is None and len(self._entries) >= self._max:
            while self._entries:  # the expired entries at the front go
                oldest = next(iter(self._entries))
                if self._entries[oldest].expires_at > now:
                    break
                self._drop(oldest)
            if len(self._entries) >= self._max:
                return False
        self._entries[key] = value
        return True

    async def purge_expired(self, now: dt.datetime) -> int:
        expired = [k for k, v in self._entries.items() if v.expires_at <= now]
        for key in expired:
            self._drop(key)
        return len(expired)


_Key = tuple[str, str, str]  # provider, state, binding hash


class MemoryStates(Bounded[_Key, PendingSignIn]):
    """:class:`~authgate.ports.state.StateStore` in a dict, bounded by ``max_entries``."""

    def __init__(self, max_entries: int = 100_000) -> None:
        super().__init__(max_entries)
        # (provider, state) -> binding hashes, for the take without a binding cookie.
        self._browsers: dict[tuple[str, str], dict[str, None]] = {}

    async def put(self, pending: PendingSignIn) -> None:
        key = (pending.provider, pending.state, pending.binding_hash)
        if not self._admit(key, pending, pending.created_at):
            raise StateStoreFull(f"{self._max} pending sign-ins")
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

    def _drop(self, key: _Key) -> PendingSignIn | None:
        pending = self._entries.pop(key, None)
        if pending is not None:
            browsers = self._browsers[key[:2]]
            del browsers[key[2]]
            if not browsers:
                del self._browsers[key[:2]]
        return pending


_ChallengeKey = tuple[str, Ceremony]


class MemoryPasskeyChallenges(Bounded[_ChallengeKey, PasskeyChallenge]):
    """:class:`~authgate.ports.passkeys.PasskeyChallenges` in a dict, bounded by
    ``max_entries``."""

    async def put(self, challenge: PasskeyChallenge) -> None:
        key = (challenge.binding_hash, challenge.ceremony)
        if not self._admit(key, challenge, challenge.created_at):
            raise ChallengeStoreFull(f"{self._max} passkey challenges")

    async def take(
        self, binding_hash: str, ceremony: Ceremony, now: dt.datetime
    ) -> PasskeyChallenge | None:
        challenge = self._entries.pop((binding_hash, ceremony), None)
        if challenge is None or challenge.expires_at <= now:
            return None
        return challenge
