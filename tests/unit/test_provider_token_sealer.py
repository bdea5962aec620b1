"""Sealing provider tokens: authenticated encryption under configured keys, bound to the
identity, with key rotation."""

from __future__ import annotations

import secrets

import pytest

from authgate.adapters.jose import JweTokenSealer, SealingKey, SealingKeyError
from authgate.domain.model import ProviderIdentity, ProviderToken, SealedToken
from authgate.ports.provider_tokens import TokenUnreadable

ALICE = ProviderIdentity("apple", "001.alice")
TOKEN = ProviderToken("r.refresh-token-value", "refresh_token")


def key(key_id: str) -> SealingKey:
    return SealingKey.from_text(key_id, secrets.token_urlsafe(32))


def test_a_sealed_token_opens_and_shows_nothing_of_the_token() -> None:
    sealer = JweTokenSealer([key("k1")])
    sealed = sealer.seal(TOKEN, ALICE)
    assert sealed.key_id == "k1"
    assert TOKEN.value not in sealed.ciphertext
    assert TOKEN.value not in repr(sealed) and TOKEN.value not in repr(TOKEN)
    assert sealer.open(sealed, ALICE) == TOKEN
    assert sealer.seal(TOKEN, ALICE).ciphertext != sealed.ciphertext  # a fresh nonce


def test_rotation_seals_under_the_first_key_and_opens_under_any() -> None:
    old, new = key("old"), key("new")
    sealed_before = JweTokenSealer([old]).seal(TOKEN, ALICE)
    rotated = JweTokenSealer([new, old])
    assert rotated.seal(TOKEN, ALICE).key_id == "new"
    assert rotated.open(sealed_before, ALICE) == TOKEN
    with pytest.raises(TokenUnreadable, match="old"):
        JweTokenSealer([new]).open(sealed_before, ALICE)


def test_a_token_moved_to_another_identity_or_altered_does_not_open() -> None:
    sealer = JweTokenSealer([key("k1")])
    sealed = sealer.seal(TOKEN, ALICE)
    with pytest.raises(TokenUnreadable):
        sealer.open(sealed, ProviderIdentity("apple", "002.mallory"))
    head, enc_key, iv, ciphertext, tag = sealed.ciphertext.split(".")
    flipped = ciphertext[:-1] + ("A" if ciphertext[-1] != "A" else "B")
    with pytest.raises(TokenUnreadable):
        sealer.open(SealedToken("k1", f"{head}.{enc_key}.{iv}.{flipped}.{tag}"), ALICE)
    with pytest.raises(TokenUnreadable):  # a key id that is not the one that sealed it
        JweTokenSealer([key("k1"), key("k2")]).open(SealedToken("k2", sealed.ciphertext), ALICE)


@pytest.mark.parametrize("secret", ["", "short", secrets.token_urlsafe(16), "!" * 43])
def test_a_key_must_be_32_bytes_of_base64(secret: str) -> None:
    with pytest.raises(SealingKeyError) as raised:
        SealingKey.from_text("k1", secret)
    assert secret not in str(raised.value) or not secret
