"""A provider's public key set (JWKS), cached.

* used for ``max_age`` (spec 8: 24 hours) after a successful fetch, then fetched again;
* fetched again *on demand* (an unknown ``kid``, a signature that does not verify, spec 8:
  "refreshed when signature validation fails"). Only the provider's token endpoint, over TLS,
  hands us ID tokens, so an unknown ``kid`` is a key rotation far more often than an attack:
  it is followed as soon as the short ``min_refetch`` floor since the last attempt has passed;
* a ``kid`` that a fetch has just proved absent is remembered for ``absent_kid_seconds``
  (at most ``absent_kid_limit`` of them) and triggers no fetch in that time;
* single flight: concurrent callers needing a fetch share one request.

Together these bound the requests a flood of forged tokens can cause: one per floor,
whatever the number of tokens or of distinct ``kid`` values.

The last good set is kept when a fetch fails.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from joserfc.jwk import KeySet

from authgate.ports.clock import Clock

log = logging.getLogger("authgate.identity")

FetchKeySet = Callable[[], Awaitable[KeySet]]

ABSENT_KID_LIMIT = 256


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
        absent_kid_seconds: float = 300.0,
        absent_kid_limit: int = ABSENT_KID_LIMIT,
        name: str = "provider",
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._max_age = max_age_seconds
        self._min_refetch = min_refetch_seconds
        self._absent_ttl = absent_kid_seconds
        self._absent_limit = absent_kid_limit
        self._name = name
        self._keys: KeySet | None = None
        self._fetched_at: dt.datetime | None = None
        self._attempted_at: dt.datetime | None = None
        self._generation = 0  # incremented after every fetch attempt
        self._succeeded_attempt = 0  # the number (``fetches``) of the last successful attempt
        # kid -> when a successful fetch showed it is not in the set; oldest first.
        self._absent: OrderedDict[str, dt.datetime] = OrderedDict()
        self._lock = asyncio.Lock()
        self.fetches = 0  # attempts, for observation

    async def get(self) -> KeySet:
        """The current key set, fetched when there is none yet or it is older than max age."""
        if self._keys is not None and not self._expired():
            return self._keys
        return await self._refresh(forced=False)

    async def refresh(self, seen: KeySet, kid: str | None = None) -> KeySet:
        """A fresher key set than ``seen`` when allowed (the on-demand fetch for ``kid``).

        Returns the cached set without fetching when another caller already replaced ``seen``,
        when ``kid`` was proved absent less than ``absent_kid_seconds`` ago, when the last
        attempt is more recent than ``min_refetch``, or when the fetch fails.
        """
        if self._keys is not seen and self._keys is not None:
            return self._keys
        if kid is not None and self._known_absent(kid):
            log.info(
                "provider %s: key set refetch skipped (kid %.80r absent from the last fetch)",
                self._name,
                kid,
            )
            return seen
        asked_after = self.fetches
        keys = await self._refresh(forced=True)
        # Proved absent only by a fetch that started after this token arrived: one already in
        # flight may predate a rotation whose new key signed the token.
        if kid is not None and self._succeeded_attempt > asked_after and not _has_kid(keys, kid):
            self._remember_absent(kid)
        return keys

    def _expired(self) -> bool:
        assert self._fetched_at is not None
        return self._seconds_since(self._fetched_at) >= self._max_age

    def _seconds_since(self, then: dt.datetime) -> float:
        return (self._clock.now() - then).total_seconds()

    def _known_absent(self, kid: str) -> bool:
        proved_at = self._absent.get(kid)
        if proved_at is None:
            return False
        if self._seconds_since(proved_at) < self._absent_ttl:
            return True
        del self._absent[kid]
        return False

    def _remember_absent(self, kid: str) -> None:
        assert self._fetched_at is not None
        self._absent[kid] = self._fetched_at
        self._absent.move_to_end(kid)
        while len(self._absent) > self._absent_limit:  # bounded: forget the oldest
            self._absent.popitem(last=False)

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
        attempt = self.fetches
        try:
            keys = await self._fetch()
        except KeySetUnavailable as e:
            self._generation += 1
            if self._keys is not None:
                log.warning("%s; keeping the last good key set", e)
                return self._keys
            raise
        self._generation += 1
        self._succeeded_attempt = attempt
        self._keys, self._fetched_at = keys, self._attempted_at
        for key in keys:  # a kid published now is no longer absent
            if key.kid is not None:
                self._absent.pop(key.kid, None)
        log.info("provider %s: key set fetched (%d keys)", self._name, len(keys.keys))
        return keys


def _has_kid(keys: KeySet, kid: str) -> bool:
    return any(key.kid == kid for key in keys)
