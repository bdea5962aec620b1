"""Session JWTs: issue, verify, and the cache of verified tokens changing no verdict."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest

from authgate.adapters.jose import JwtSessionTokens, ephemeral_keys
from authgate.adapters.jose import session_tokens as session_jwt
from authgate.ports.session_tokens import InvalidSession

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def tokens(ttl_seconds: int = 3600) -> JwtSessionTokens:
    return JwtSessionTokens(
        ephemeral_keys(), issuer="iss", audience="aud", ttl=dt.timedelta(seconds=ttl_seconds)
    )


def test_a_cached_token_still_expires() -> None:
    sessions = tokens(ttl_seconds=90)
    token = sessions.issue("acct", "google", NOW).token
    assert sessions.verify(token, NOW).account_id == "acct"
    assert sessions.verify(token, NOW + dt.timedelta(seconds=30)).account_id == "acct"  # cached
    with pytest.raises(InvalidSession):
        sessions.verify(token, NOW + dt.timedelta(seconds=200))


def test_a_cache_entry_lives_at_most_a_minute_then_the_token_is_verified_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sessions = tokens()
    token = sessions.issue("acct", "google", NOW).token
    sessions.verify(token, NOW)
    calls: list[str] = []
    original = sessions._verify

    def counting(t: str, now: dt.datetime) -> object:
        calls.append(t)
        return original(t, now)

    monkeypatch.setattr(sessions, "_verify", counting)
    sessions.verify(token, NOW + dt.timedelta(seconds=59))
    assert calls == []
    sessions.verify(token, NOW + dt.timedelta(seconds=61))
    assert calls == [token]


def test_a_changed_token_is_never_served_from_the_cache() -> None:
    sessions = tokens()
    token = sessions.issue("acct", "google", NOW).token
    sessions.verify(token, NOW)
    header, payload, signature = token.split(".")
    middle = len(signature) // 2
    changed = "A" if signature[middle] != "A" else "B"
    forged = f"{header}.{payload}.{signature[:middle]}{changed}{signature[middle + 1 :]}"
    with pytest.raises(InvalidSession):
        sessions.verify(forged, NOW)
    other = tokens().issue("acct", "google", NOW).token  # another service's key
    with pytest.raises(InvalidSession):
        sessions.verify(other, NOW)


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_jwt, "VERIFIED_CACHE_SIZE", 3)
    sessions = tokens()
    issued = [sessions.issue(f"a{i}", "google", NOW).token for i in range(5)]
    for token in issued:
        sessions.verify(token, NOW)
    assert len(sessions._verified) == 3
    assert list(sessions._verified) == [hashlib.sha256(t.encode()).digest() for t in issued[2:]]


def _issued_with(key: object, algorithm: str) -> tuple[str, str]:
    """A token from the service's signer and one from joserfc for the same claims."""
    from joserfc import jwt
    from joserfc.jwk import KeySet

    keys = KeySet([key])  # type: ignore[list-item]
    service = JwtSessionTokens(keys, issuer="iss", audience="aud", ttl=dt.timedelta(hours=1))
    issued = service.issue("acc-1", "google", NOW, session_id="sid-1")
    claims = jwt.decode(issued.token, keys, algorithms=[algorithm]).claims
    header = {"alg": algorithm, "kid": keys.keys[0].kid, "typ": "JWT"}
    return issued.token, jwt.encode(header, claims, keys.keys[0], algorithms=[algorithm])


@pytest.mark.filterwarnings("ignore:EdDSA is deprecated")  # joserfc's, on its own side
@pytest.mark.parametrize("curve", ["Ed25519", "Ed448"])
def test_eddsa_session_tokens_are_joserfcs_byte_for_byte(curve: str) -> None:
    from joserfc.jwk import OKPKey

    ours, joserfcs = _issued_with(OKPKey.generate_key(curve, parameters={"kid": "k"}), "EdDSA")
    assert ours == joserfcs  # EdDSA signatures are deterministic


def test_es256_session_tokens_have_joserfcs_header_and_payload_and_verify() -> None:
    from joserfc import jws
    from joserfc.jwk import ECKey

    key = ECKey.generate_key("P-256", parameters={"kid": "k"})
    ours, joserfcs = _issued_with(key, "ES256")
    assert ours.rsplit(".", 1)[0] == joserfcs.rsplit(".", 1)[0]
    assert len(ours.rsplit(".", 1)[1]) == 86  # r || s, 64 bytes in base64url
    assert jws.deserialize_compact(ours, key, algorithms=["ES256"]).payload is not None
