"""A provider's public key set (JWKS), cached.

* used for ``max_age`` (spec 8: 24 hours) after a successful fetch, then fetched again;
* fetched again *on demand* (an unknown ``kid``, a signature that does not verify), at most
  once per ``min_refetch`` interval, so a flood of forged tokens cannot turn into a flood of
  requests to the provider;
* single flight: concurrent callers needing a fetch share one request;
* the last good set is kept when a fetch fails.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable

from joserfc.jwk import KeySet

from authgate.ports.clock import Clock

log = logging.getLogger("authgate.identity")

FetchKeySet = Callable[[], Awaitable[KeySet]]


class KeySetUnavailable(Exception):
    """No key set could be loaded at all; the text is safe to log."""


class KeySetCache:
    """The cached key set of one provider."""

    def __init__(
        self,
        fetch: FetchKeySet,
        clock: Clock,
        *,
        max_age_seconds: float,
        min_refetch_seconds: float,
        name: str = "provider",
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._max_age = max_age_seconds
        self._min_refetch = min_refetch_seconds
        self._name = name
        self._keys: KeySet | None = None
        self._fetched_at: dt.datetime | None = None
        self._attempted_at: dt.datetime | None = None
        self._generation = 0  # incremented after every fetch attempt
        self._lock = asyncio.Lock()
        self.fetches = 0  # attempts, for observation

    async def get(self) -> KeySet:
        """The current key set, fetched when there is none yet or it is older than max age."""
        if self._keys is not None and not self._expired():
            return self._keys
        return await self._refresh(forced=False)

    async def refresh(self, seen: KeySet) -> KeySet:
        """A fresher key set than ``seen`` when allowed (the on-demand fetch).

        Returns the cached set without fetching when another caller already replaced ``seen``,
        when the last attempt is more recent than ``min_refetch``, or when the fetch fails.
        """
        if self._keys is not seen and self._keys is not None:
            return self._keys
        return await self._refresh(forced=True)

    def _expired(self) -> bool:
        assert self._fetched_at is not None
        return self._seconds_since(self._fetched_at) >= self._max_age

    def _seconds_since(self, then: dt.datetime) -> float:
        return (self._clock.now() - then).total_seconds()

    async def _refresh(self, *, forced: bool) -> KeySet:
        generation = self._generation
        async with self._lock:
            if self._generation != generation:  # fetched (or tried) while we waited
                if self._keys is not None:
                    return self._keys
                raise KeySetUnavailable(f"provider {self._name}: key set unavailable")
            if not forced and self._keys is not None and not self._expired():
                return self._keys
            recently = self._attempted_at is not None and (
                self._seconds_since(self._attempted_at) < self._min_refetch
            )
            if recently and self._keys is not None:
                if forced:
                    log.info("provider %s: key set refetch skipped (rate limit)", self._name)
                return self._keys
            if recently and not forced and self._keys is None:
                raise KeySetUnavailable(f"provider {self._name}: key set fetch failed recently")
            return await self._fetch_now()

    async def _fetch_now(self) -> KeySet:
        self._attempted_at = self._clock.now()
        self.fetches += 1
        try:
            keys = await self._fetch()
        except KeySetUnavailable as e:
            self._generation += 1
            if self._keys is not None:
                log.warning("%s; keeping the last good key set", e)
                return self._keys
            raise
        self._generation += 1
        self._keys, self._fetched_at = keys, self._attempted_at
        log.info("provider %s: key set fetched (%d keys)", self._name, len(keys.keys))
        return keys
