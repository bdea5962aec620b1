"""Key rotation at a running authgate, followed by authgate.client: a new key put first in
``session.keys_file`` is fetched when a token names it (unknown ``kid``), and a key removed
stops verifying once the cached key set is older than ``cache_ttl_seconds``."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from joserfc.jwk import ECKey

from authgate.client import InvalidSession, SessionVerifier
from tests.client.support import AUDIENCE, ISSUER, Authgate, claims_of


@pytest.fixture
def authgate(tmp_path: Path) -> Iterator[Authgate]:
    service = Authgate(tmp_path)
    service.start()
    try:
        yield service
    finally:
        service.stop()


def kid_of(token: str) -> str:
    header = token.split(".")[0]
    kid: str = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["kid"]
    return kid


async def test_a_rotated_key_is_followed_and_a_removed_one_dropped(authgate: Authgate) -> None:
    token_a = await authgate.sign_in("ada")
    old = authgate.private_keys()
    # A long cache: only an unknown kid can make this one fetch again.
    long_cache = SessionVerifier.for_service(
        authgate.base,
        issuer=ISSUER,
        audience=AUDIENCE,
        cache_ttl_seconds=300,
        min_refetch_seconds=0.2,
    )
    short_cache = SessionVerifier.for_service(
        authgate.base, issuer=ISSUER, audience=AUDIENCE, cache_ttl_seconds=1
    )
    async with long_cache, short_cache:
        assert (await long_cache.verify(token_a)).account_id == claims_of(token_a)["sub"]
        await short_cache.verify(token_a)
        assert long_cache.keys.fetches == 1

        # Rotation: a new key first (it signs), the old one kept (it still verifies).
        new = ECKey.generate_key("P-256", parameters={"kid": uuid.uuid4().hex, "use": "sig"})
        authgate.keys_file.write_text(json.dumps({"keys": [new.as_dict(private=True), *old]}))
        authgate.restart()
        token_b = await authgate.sign_in("grace")
        assert kid_of(token_b) == new.kid != kid_of(token_a)

        session = await long_cache.verify(token_b)
        assert session.account_id == claims_of(token_b)["sub"]
        assert long_cache.keys.fetches == 2  # the unknown kid, once
        await long_cache.verify(token_a)  # the old key is still published
        await long_cache.verify(token_b)
        assert long_cache.keys.fetches == 2

        # The old key removed: sessions it signed stop verifying once the cache is refreshed.
        authgate.keys_file.write_text(json.dumps({"keys": [new.as_dict(private=True)]}))
        authgate.restart()
        await asyncio.sleep(1.1)
        with pytest.raises(InvalidSession, match="unknown key"):
            await short_cache.verify(token_a)
        await short_cache.verify(token_b)
        # Stateless: a verifier whose cache is still young keeps trusting the removed key
        # until its cache_ttl_seconds have passed (docs/integration.md).
        await long_cache.verify(token_a)


async def test_the_last_good_keys_serve_while_authgate_is_down(authgate: Authgate) -> None:
    token = await authgate.sign_in("ada")
    verifier = SessionVerifier.for_service(
        authgate.base,
        issuer=ISSUER,
        audience=AUDIENCE,
        cache_ttl_seconds=0.5,
        min_refetch_seconds=30,
        timeout_seconds=2,
    )
    async with verifier:
        await verifier.verify(token)
        authgate.stop()
        try:
            await asyncio.sleep(0.6)
            # The refresh fails: the last good set still verifies...
            assert (await verifier.verify(token)).account_id == claims_of(token)["sub"]
            assert verifier.keys.fetches == 2
            # ...and a down authgate is not asked again on every request (the floor).
            await asyncio.sleep(0.6)
            await verifier.verify(token)
            assert verifier.keys.fetches == 2
        finally:
            authgate.start()
