"""A public key set (JWKS) fetched from its issuer, cached, and compact JWS verified against it.

The set is used for ``max_age`` (spec 8: 24 hours), then fetched again; it is also fetched on
demand (an unknown ``kid``, a signature that fails: spec 8) at most once per ``min_refetch``
floor, concurrent callers sharing one fetch. The last good set is kept when a fetch fails.

When the floor blocks a fetch, the caller chooses (``wait``):

* ID tokens come only from the provider's token endpoint over TLS, so an unknown ``kid`` is a
  rotation, never an attack: the caller waits for the floor (holding the single flight) and
  fetches, so a genuine token never fails for a fetch made a moment ago;
* event tokens are posted by anyone: the caller gets the cached set, not fresh ("retry
  later"), and a ``kid`` a fetch proved absent triggers no fetch for ``absent_kid_seconds``
  (at most ``absent_kid_limit`` remembered). Forged tokens thus cost the provider one request
  per floor, and with a cache of their own they can neither delay nor fail a sign-in.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

import attrs
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import Key, KeySet

from authgate.adapters.http_fetch import ProviderHttp
from authgate.ports.clock import Clock
from authgate.ports.provider import ExchangeFailed, VerificationFailed

log = logging.getLogger("authgate.identity")

FetchKeySet = Callable[[], Awaitable[KeySet]]
Sleep = Callable[[float], Awaitable[None]]

ABSENT_KID_LIMIT = 256
WAIT_STEP_SECONDS = 0.25  # a waiting caller looks at the clock this often


class KeySetUnavailable(Exception):
    """No key set could be loaded at all; the text is safe to log."""


@attrs.frozen
class Lookup:
    """A key set handed to a caller; ``fresh``: fetched after the caller asked (a ``kid``
    missing from it is missing at the provider)."""

    keys: KeySet
    fresh: bool


@attrs.define(eq=False)
class KeySetCache:
    """The cached key set of one provider (for one kind of token)."""

    _fetch: FetchKeySet
    _clock: Clock
    _max_age_seconds: float = attrs.field(kw_only=True)
    _min_refetch_seconds: float = attrs.field(kw_only=True)
    _absent_kid_seconds: float = attrs.field(default=300.0, kw_only=True)
    _absent_kid_limit: int = attrs.field(default=ABSENT_KID_LIMIT, kw_only=True)
    _name: str = attrs.field(default="provider", kw_only=True)
    _sleep: Sleep = attrs.field(default=asyncio.sleep, kw_only=True)
    _keys: KeySet | None = attrs.field(default=None, init=False)
    _fetched_at: dt.datetime | None = attrs.field(default=None, init=False)
    _attempted_at: dt.datetime | None = attrs.field(default=None, init=False)
    # the number (``fetches``) of the last successful attempt
    _succeeded_attempt: int = attrs.field(default=0, init=False)
    # kid -> when a successful fetch showed it is not in the set; oldest first.
    _absent: OrderedDict[str, dt.datetime] = attrs.field(factory=OrderedDict, init=False)
    _lock: asyncio.Lock = attrs.field(factory=asyncio.Lock, init=False)
    fetches: int = attrs.field(default=0, init=False)  # attempts, for observation

    async def get(self) -> KeySet:
        """The current key set, fetched when there is none yet or it is older than max age."""
        return (await self.current()).keys

    async def current(self, *, wait: bool = False) -> Lookup:
        """The current key set; fetched (fresh) when there is none yet or it is older than
        max age. Raises KeySetUnavailable when there is none and none can be fetched (at once,
        or after the floor with ``wait``)."""
        if self._keys is not None and not self._expired():
            return Lookup(self._keys, fresh=False)
        asked = self.fetches
        async with self._lock:
            done = self._attempted_since(asked)
            if done is not None:
                return done
            if self._keys is not None and not self._expired():
                return Lookup(self._keys, fresh=False)
            if self._floor_remaining() > 0:
                if self._keys is not None:  # a refetch at max age failed a moment ago
                    return Lookup(self._keys, fresh=False)
                if not wait:
                    raise KeySetUnavailable(f"provider {self._name}: key set fetch failed recently")
                await self._wait_for_floor()
            return await self._fetch_now()

    async def refresh(self, kid: str | None = None, *, wait: bool = False) -> Lookup:
        """A key set fetched for the caller's token (for ``kid``, or for a signature that
        failed when ``kid`` is None); the cached set, not fresh, when it already holds ``kid``,
        when the fetch fails, or when the floor blocks it without ``wait`` (module text)."""
        keys = self._keys
        if kid is not None and keys is not None and _has_kid(keys, kid):
            return Lookup(keys, fresh=False)
        if not wait and kid is not None and keys is not None and self._known_absent(kid):
            log.info(
                "provider %s: key set refetch skipped (kid %.80r absent from the last fetch)",
                self._name,
                kid,
            )
            return Lookup(keys, fresh=False)
        asked = self.fetches
        async with self._lock:
            if kid is not None and self._keys is not None and _has_kid(self._keys, kid):
                return Lookup(self._keys, fresh=False)  # the fetch we waited behind brought it
            lookup = self._attempted_since(asked)
            if lookup is None:
                if self._floor_remaining() > 0:
                    if not wait:
                        if self._keys is None:
                            raise KeySetUnavailable(
                                f"provider {self._name}: key set fetch failed recently"
                            )
                        log.info("provider %s: key set refetch skipped (rate limit)", self._name)
                        return Lookup(self._keys, fresh=False)
                    await self._wait_for_floor()
                lookup = await self._fetch_now()
        # Proved absent only by a fetch that started after this token arrived: one already in
        # flight may predate a rotation whose new key signed the token.
        if kid is not None and lookup.fresh and not _has_kid(lookup.keys, kid):
            self._remember_absent(kid)
        return lookup

    def _attempted_since(self, asked: int) -> Lookup | None:
        """What an attempt that began after the caller asked (attempt number > ``asked``)
        gave, or None when there was none: fresh when the last one succeeded."""
        if self.fetches <= asked:
            return None
        if self._succeeded_attempt > asked:
            assert self._keys is not None
            return Lookup(self._keys, fresh=self._succeeded_attempt == self.fetches)
        if self._keys is None:
            raise KeySetUnavailable(f"provider {self._name}: key set unavailable")
        return Lookup(self._keys, fresh=False)

    def _expired(self) -> bool:
        assert self._fetched_at is not None
        return self._seconds_since(self._fetched_at) >= self._max_age_seconds

    def _seconds_since(self, then: dt.datetime) -> float:
        return (self._clock.now() - then).total_seconds()

    def _floor_remaining(self) -> float:
        if self._attempted_at is None:
            return 0.0
        return self._min_refetch_seconds - self._seconds_since(self._attempted_at)

    async def _wait_for_floor(self) -> None:
        """Wait (holding the single flight) until the floor has passed on the clock; bounded
        by the floor in real time whatever the clock does."""
        remaining = self._floor_remaining()
        log.info("provider %s: key set refetch in %.1f s (rate limit)", self._name, remaining)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + remaining
        while remaining > 0 and loop.time() < deadline:
            await self._sleep(min(remaining, WAIT_STEP_SECONDS, deadline - loop.time()))
            remaining = self._floor_remaining()

    def _known_absent(self, kid: str) -> bool:
        proved_at = self._absent.get(kid)
        if proved_at is None:
            return False
        if self._seconds_since(proved_at) < self._absent_kid_seconds:
            return True
        del self._absent[kid]
        return False

    def _remember_absent(self, kid: str) -> None:
        assert self._fetched_at is not None
        self._absent[kid] = self._fetched_at
        self._absent.move_to_end(kid)
        while len(self._absent) > self._absent_kid_limit:  # bounded: forget the oldest
            self._absent.popitem(last=False)

    async def _fetch_now(self) -> Lookup:
        self._attempted_at = self._clock.now()
        self.fetches += 1
        attempt = self.fetches
        try:
            keys = await self._fetch()
        except KeySetUnavailable as e:
            if self._keys is not None:
                log.warning("%s; keeping the last good key set", e)
                return Lookup(self._keys, fresh=False)
            raise
        self._succeeded_attempt = attempt
        self._keys, self._fetched_at = keys, self._attempted_at
        for key in keys:  # a kid published now is no longer absent
            if key.kid is not None:
                self._absent.pop(key.kid, None)
        log.info("provider %s: key set fetched (%d keys)", self._name, len(keys.keys))
        return Lookup(keys, fresh=True)


def _has_kid(keys: KeySet, kid: str) -> bool:
    return any(key.kid == kid for key in keys)


async def fetch_jwks(http: ProviderHttp, jwks_uri: str) -> KeySet:
    """The provider's published key set at ``jwks_uri``: its public keys only."""
    what = f"provider {http.name}: key set"
    answer = await http.call("GET", jwks_uri, what, KeySetUnavailable)
    if answer.status != 200:
        raise KeySetUnavailable(f"{what} answered HTTP {answer.status}")
    return public_key_set(answer.body, what, _is_public_jwk)


def public_key_set(
    document: Any, what: str, accepted: Callable[[Mapping[str, Any]], bool]
) -> KeySet:
    """The keys of a JWK Set ``document`` that are ``accepted`` (KeySetUnavailable)."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise KeySetUnavailable(f"{what} is not a JSON Web Key Set")
    public = [k for k in document["keys"] if isinstance(k, dict) and accepted(k)]
    try:
        return KeySet.import_key_set({"keys": public})
    except (JoseError, ValueError, TypeError, KeyError):
        raise KeySetUnavailable(f"{what} holds no usable key") from None


def _is_public_jwk(jwk: Mapping[str, Any]) -> bool:
    # A published set never holds private parts; symmetric keys ("oct") are never accepted.
    return jwk.get("kty") != "oct" and not any(p in jwk for p in ("d", "p", "q", "k"))


# Verifying a compact JWS against such a key set: ID tokens, event tokens, clients' assertions.

MAX_TOKEN_LENGTH = 16 * 1024


async def verified_payload(
    keys: KeySetCache,
    token: str,
    alg: str,
    kid: str | None,
    what: str = "ID token",
    *,
    wait: bool = True,
) -> bytes:
    """The payload of ``token`` once its signature verifies with the key of ``keys`` for
    ``kid`` and ``alg``, the set fetched again for an unknown ``kid`` or a failed signature
    (``wait``: see :class:`KeySetCache`). VerificationFailed when it does not verify with the
    keys fetched for it; ExchangeFailed ("retry later", not "bad token") when they could not
    be looked at (no key set, or an unknown ``kid`` no fetch for this token looked for)."""
    try:
        lookup = await keys.current(wait=wait)
    except KeySetUnavailable as e:
        raise ExchangeFailed(str(e)) from None
    key = pick_key(lookup.keys, alg, kid)
    if key is None:  # unknown kid: the provider may have rotated its keys
        key = await _rotated_key(keys, lookup, alg, kid, what, wait)
        return verify_signature(token, key, alg, what)
    try:
        return verify_signature(token, key, alg, what)
    except VerificationFailed:
        if lookup.fresh:
            raise
        # A key replaced under the same kid: look once more.
        fresh = await _refresh(keys, None, wait)
        fresh_key = pick_key(fresh.keys, alg, kid) if fresh.fresh else None
        if fresh_key is None or fresh_key.as_dict() == key.as_dict():
            raise
        return verify_signature(token, fresh_key, alg, what)


async def _rotated_key(
    keys: KeySetCache, lookup: Lookup, alg: str, kid: str | None, what: str, wait: bool
) -> Key:
    """The key named by a ``kid`` that ``lookup`` does not hold, from a key set fetched for it
    (unless ``lookup`` is one already)."""
    if not lookup.fresh:
        lookup = await _refresh(keys, kid, wait)
        key = pick_key(lookup.keys, alg, kid)
        if key is not None:
            return key
    # A fetch made for this very token proved it absent, or the kid names a key that is not
    # for this use or algorithm.
    if lookup.fresh or any(k.kid == kid for k in lookup.keys):
        raise VerificationFailed(f"no key in the provider's key set for kid {loggable(kid)}")
    raise ExchangeFailed(
        f"{what}: the provider's key set could not be refreshed for kid {loggable(kid)}"
    )


async def _refresh(keys: KeySetCache, kid: str | None, wait: bool) -> Lookup:
    try:
        return await keys.refresh(kid, wait=wait)
    except KeySetUnavailable as e:
        raise ExchangeFailed(str(e)) from None


def header_of(token: str, what: str = "ID token") -> dict[str, Any]:
    """The JOSE header of a compact JWS (VerificationFailed when it is not one)."""
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
        raise VerificationFailed(f"{what} is missing or too long")
    parts = token.split(".")
    if len(parts) != 3:
        raise VerificationFailed(f"{what} is not a compact JWS (three parts)")
    try:
        raw = base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4))
    except (binascii.Error, ValueError):
        raise VerificationFailed(f"{what} header is not base64url") from None
    return json_object(raw, what)


def signed_header(
    token: str, algorithms: Collection[str], what: str = "ID token"
) -> tuple[str, str | None]:
    """The ``alg`` (one of ``algorithms``) and ``kid`` of a compact JWS's header
    (VerificationFailed for a header that is not one to verify)."""
    header = header_of(token, what)
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in algorithms:
        raise VerificationFailed(f"{what} algorithm {loggable(alg)} is not allowed")
    if "crit" in header or "b64" in header:
        raise VerificationFailed(f"{what} header has unsupported critical parameters")
    kid = header.get("kid")
    if kid is not None and not isinstance(kid, str):
        raise VerificationFailed(f"{what} kid is not a string")
    return alg, kid


def json_object(raw: bytes, what: str = "ID token") -> dict[str, Any]:
    """``raw`` as a JSON object (VerificationFailed otherwise)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise VerificationFailed(f"{what} part is not JSON") from None
    if not isinstance(value, dict):
        raise VerificationFailed(f"{what} part is not a JSON object")
    return value


def pick_key(keys: KeySet, alg: str, kid: str | None) -> Key | None:
    """The signature key of ``keys`` for ``alg`` named ``kid`` (the only one, when the token
    names none), or None."""
    key_types = KeySet.algorithm_keys.get(alg, [])
    usable = [
        key
        for key in keys
        if key.key_type in key_types
        and key.get("use") in (None, "sig")
        and key.get("alg") in (None, alg)
    ]
    if kid is None:  # only an unambiguous key set may omit the kid
        return usable[0] if len(usable) == 1 else None
    for key in usable:
        if key.kid == kid:
            return key
    return None


def verify_signature(token: str, key: Key, alg: str, what: str = "ID token") -> bytes:
    """The payload of ``token`` once its signature verifies with ``key`` and ``alg``
    (joserfc's verification of the compact JWS)."""
    try:
        obj = jws.deserialize_compact(token, key, algorithms=[alg])
    except JoseError as e:
        raise VerificationFailed(f"{what} signature does not verify ({e.error})") from None
    except (ValueError, TypeError):
        raise VerificationFailed(f"{what} signature does not verify") from None
    assert obj.payload is not None
    return obj.payload


def loggable(value: object) -> str:
    """A claim or header value for a log line: quoted, bounded."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
