"""authgate's public keys (``GET /.well-known/jwks.json``), fetched and cached: the session
keys for :class:`~authgate.client.SessionVerifier`, the access token keys for
:class:`~authgate.client.AccessTokenVerifier`.

* used for ``max_age_seconds`` after a successful fetch, then fetched again, so a key that
  authgate stops publishing stops verifying within that time;
* fetched again on demand when a token names a ``kid`` the cached set lacks (authgate has put a
  new key first), at most once per ``min_refetch_seconds``, whatever the number of tokens or of
  distinct ``kid`` values: a flood of forged tokens costs authgate one request per floor;
* single flight: concurrent callers needing a fetch share one request;
* the last good set is kept when a fetch fails (authgate briefly unreachable).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
from joserfc.errors import JoseError
from joserfc.jwk import Key, KeySet

log = logging.getLogger("authgate.client")

# Key types authgate signs sessions with (ES256 on P-256, EdDSA on Ed25519); others are ignored.
# A key type is (kty, crv), crv "" for a type without curves.
KEY_TYPES = {("EC", "P-256"): "ES256", ("OKP", "Ed25519"): "EdDSA"}
# Key types authgate's access tokens (RFC 9068) may be signed with: RS256 (what authgate signs
# them with today) and ES256.
ACCESS_TOKEN_KEY_TYPES = {("RSA", ""): "RS256", ("EC", "P-256"): "ES256"}
MAX_JWKS_BYTES = 256 * 1024
# RFC 7518 section 6: the private members of EC, OKP and RSA keys.
PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth"})


class KeySetUnavailable(Exception):
    """No key set could be loaded at all (authgate unreachable or answering nonsense, and no
    earlier set to fall back on). The text is safe to log."""


def key_type(key: Key) -> tuple[str, str]:
    """The (kty, crv) pair of ``key`` as :data:`KEY_TYPES` names it."""
    crv = key.get("crv")
    return key.key_type, crv if isinstance(crv, str) else ""


class JwksCache:
    """The cached public key set at ``url``; ``key_types``: the key types kept of it
    (:func:`parse_jwks`); ``label``: what the keys are, in messages."""

    def __init__(
        self,
        url: str,
        http: Callable[[], aiohttp.ClientSession],
        *,
        max_age_seconds: float,
        min_refetch_seconds: float,
        timeout_seconds: float,
        key_types: Mapping[tuple[str, str], str] = KEY_TYPES,
        label: str = "session keys",
    ) -> None:
        self._url = url
        self._key_types = key_types
        self._label = label  # what the keys are, in messages
        self._http = http
        self._max_age = max_age_seconds
        self._min_refetch = min_refetch_seconds
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._keys: KeySet | None = None
        self._fetched_at = 0.0
        self._attempted_at: float | None = None
        self._generation = 0  # incremented after every fetch attempt
        self._lock = asyncio.Lock()
        self.fetches = 0  # attempts, for observation

    async def get(self) -> KeySet:
        """The current key set; fetched when there is none yet or it is older than max age."""
        if self._keys is not None and time.monotonic() - self._fetched_at < self._max_age:
            return self._keys
        return await self._refresh(forced=False)

    async def refresh(self, seen: KeySet) -> KeySet:
        """A fresher set than ``seen`` when the floor allows (a token named an unknown kid);
        the cached set otherwise."""
        if self._keys is not None and self._keys is not seen:
            return self._keys  # another caller replaced it meanwhile
        return await self._refresh(forced=True)

    async def _refresh(self, *, forced: bool) -> KeySet:
        generation = self._generation
        async with self._lock:
            if self._generation != generation:  # fetched (or tried) while we waited
                if self._keys is not None:
                    return self._keys
                raise KeySetUnavailable(f"{self._label} at {self._url}: unavailable")
            now = time.monotonic()
            fresh = self._keys is not None and now - self._fetched_at < self._max_age
            if not forced and fresh:
                assert self._keys is not None
                return self._keys
            # The floor spaces on-demand fetches and retries after a failure; an expired set
            # after a good fetch is due by its age alone (else a TTL below the floor would
            # silently become the floor).
            last_failed = self._keys is None or self._attempted_at != self._fetched_at
            recently = (
                (forced or last_failed)
                and self._attempted_at is not None
                and now - self._attempted_at < self._min_refetch
            )
            if recently:
                if self._keys is not None:
                    return self._keys
                raise KeySetUnavailable(f"{self._label} at {self._url}: fetch failed recently")
            return await self._fetch_now()

    async def _fetch_now(self) -> KeySet:
        self._attempted_at = time.monotonic()
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
        log.info("%s fetched from %s (%d keys)", self._label, self._url, len(keys.keys))
        return keys

    async def _fetch(self) -> KeySet:
        try:
            async with self._http().get(
                self._url, timeout=self._timeout, allow_redirects=False
            ) as response:
                if response.status != 200:
                    raise KeySetUnavailable(f"{self._label} at {self._url}: HTTP {response.status}")
                body = await response.content.read(MAX_JWKS_BYTES + 1)
        except (aiohttp.ClientError, TimeoutError) as e:
            raise KeySetUnavailable(
                f"{self._label} at {self._url}: {type(e).__name__}: {e}"
            ) from None
        if len(body) > MAX_JWKS_BYTES:
            raise KeySetUnavailable(f"{self._label} at {self._url}: answer too large")
        return parse_jwks(body, self._url, self._key_types)


def parse_jwks(
    body: bytes, url: str, key_types: Mapping[tuple[str, str], str] = KEY_TYPES
) -> KeySet:
    """The usable signature keys of a JWKS document: public keys of ``key_types`` (by default
    EC P-256 and OKP Ed25519) with a ``kid``; anything else in the set is skipped (a future key
    type must not break the keys that work)."""
    try:
        document = json.loads(body)
    except ValueError:
        raise KeySetUnavailable(f"keys at {url}: not JSON") from None
    entries = document.get("keys") if isinstance(document, Mapping) else None
    if not isinstance(entries, list):
        raise KeySetUnavailable(f"keys at {url}: no keys list")
    usable: list[Key] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        kid, kind = entry.get("kid"), (str(entry.get("kty")), str(entry.get("crv", "")))
        if not isinstance(kid, str) or not kid or kind not in key_types:
            continue
        if entry.get("use", "sig") != "sig":
            continue
        alg = entry.get("alg")
        if alg is not None and alg != key_types[kind]:
            continue
        # The public members only: a private half published by mistake is not ours to use.
        public: dict[str, Any] = {k: v for k, v in entry.items() if k not in PRIVATE_MEMBERS}
        try:
            usable.extend(KeySet.import_key_set({"keys": [public]}).keys)
        except (JoseError, ValueError, TypeError, KeyError) as e:
            log.warning("keys at %s: key %.80r skipped: %s", url, kid, e)
    return KeySet(usable)
