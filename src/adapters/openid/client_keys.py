"""The keys of ``private_key_jwt`` clients, and their assertions' signatures (RFC 7523).

Keys registered inline (``jwks``) are used as they are; those at a ``jwks_uri`` are cached as a
provider's event keys are (one cache per client, never waiting for the floor): anyone can post
an assertion naming a client, so forged ones cost its server one request per floor at most.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import aiohttp
import attrs
from joserfc.jwk import KeySet

from authgate.adapters.http_fetch import FetchError, request_json
from authgate.adapters.jose.key_sets import (
    KeySetCache,
    KeySetUnavailable,
    json_object,
    loggable,
    pick_key,
    public_key_set,
    signed_header,
    verified_payload,
    verify_signature,
)
from authgate.domain.openid.clients import ASSERTION_ALGORITHMS, Client
from authgate.ports.clock import Clock
from authgate.ports.openid import AssertionRejected, ClientKeysUnavailable
from authgate.ports.provider import ExchangeFailed, VerificationFailed

WHAT = "client assertion"
MAX_KEY_SET_BYTES = 256 * 1024


@attrs.define(eq=False)
class RegisteredClientKeys:
    """:class:`~authgate.ports.openid.ClientAssertionSignatures` on the keys the clients
    registered. ``session`` None: nothing is fetched (as for the OpenAPI document's
    resources), so only inline keys work."""

    _session: aiohttp.ClientSession | None
    _clock: Clock
    _max_age_seconds: float = attrs.field(default=3600.0, kw_only=True)
    _min_refetch_seconds: float = attrs.field(default=5.0, kw_only=True)
    _timeout_seconds: float = attrs.field(default=10.0, kw_only=True)
    _inline: dict[str, tuple[str, KeySet]] = attrs.field(factory=dict, init=False)
    _published: dict[str, KeySetCache] = attrs.field(factory=dict, init=False)

    async def verified_claims(self, client: Client, assertion: str) -> Mapping[str, Any]:
        try:
            alg, kid = signed_header(assertion, ASSERTION_ALGORITHMS, WHAT)
            if client.jwks is not None:
                key = pick_key(self._inline_keys(client), alg, kid)
                if key is None:
                    raise VerificationFailed(f"no registered key for kid {loggable(kid)}")
                payload = verify_signature(assertion, key, alg, WHAT)
            else:
                keys = self._published_keys(client)
                payload = await verified_payload(keys, assertion, alg, kid, WHAT, wait=False)
            return json_object(payload, WHAT)
        except VerificationFailed as e:
            raise AssertionRejected(f"client {loggable(client.client_id)}: {e}") from None
        except (ExchangeFailed, KeySetUnavailable) as e:
            raise ClientKeysUnavailable(f"client {loggable(client.client_id)}: {e}") from None

    def _inline_keys(self, client: Client) -> KeySet:
        # Kept with the JSON they came from: a client described by a metadata document (or
        # registered at run time) may change its keys while the service runs.
        assert client.jwks is not None
        kept = self._inline.get(client.client_id)
        if kept is None or kept[0] != client.jwks:
            keys = _public_key_set(json.loads(client.jwks), f"client {client.client_id}")
            kept = self._inline[client.client_id] = (client.jwks, keys)
        return kept[1]

    def _published_keys(self, client: Client) -> KeySetCache:
        cache = self._published.get(client.client_id)
        if cache is None:
            if client.jwks_uri is None:
                raise VerificationFailed(f"{WHAT}: the client registered no keys")
            url, name = client.jwks_uri, f"client {client.client_id}"
            cache = KeySetCache(
                lambda: self._fetch(url, name),
                self._clock,
                max_age_seconds=self._max_age_seconds,
                min_refetch_seconds=self._min_refetch_seconds,
                name=name,
            )
            self._published[client.client_id] = cache
        return cache

    async def _fetch(self, url: str, name: str) -> KeySet:
        what = f"{name}: key set"
        if self._session is None:
            raise KeySetUnavailable(f"{what}: this process fetches nothing")
        try:
            answer = await request_json(
                self._session,
                "GET",
                url,
                what=what,
                timeout_seconds=self._timeout_seconds,
                max_bytes=MAX_KEY_SET_BYTES,
            )
        except FetchError as e:
            raise KeySetUnavailable(str(e)) from None
        if answer.status != 200:
            raise KeySetUnavailable(f"{what} answered HTTP {answer.status}")
        return _public_key_set(answer.body, name)


def _public_key_set(document: Any, name: str) -> KeySet:
    return public_key_set(document, f"{name}: key set", _is_signature_key)


def _is_signature_key(jwk: Mapping[str, Any]) -> bool:
    # Private, symmetric and encryption keys left out: a published set never holds them.
    return (
        jwk.get("kty") in ("RSA", "EC", "OKP")
        and not any(p in jwk for p in ("d", "p", "q"))
        and jwk.get("use", "sig") == "sig"
    )
