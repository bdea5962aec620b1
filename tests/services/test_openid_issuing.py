"""The tokens both grants issue: the access token's and the ID token's claims, the client's
signing algorithm, ``at_hash``, and the refresh token a family starts with."""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs

from authgate.domain.model import UNPROVEN_AUTH_TIME
from authgate.domain.openid.records import AccessTokenClaims, token_digest
from authgate.services.openid.issuing import (
    Issuance,
    TokenIssuer,
    first_refresh_token,
    refresh_record,
)
from tests.services.fakes import START
from tests.services.openid_fakes import FIRST, ISSUER, WEB, FakeSigner, at_hash, clients

NOW = START + dt.timedelta(minutes=5)
AUTH_TIME = START


def issuance(client_id: str = FIRST, **changes: Any) -> Issuance:
    """What a response issues tokens for, of ``client_id``, with ``changes``."""
    client = clients().get(client_id)
    assert client is not None
    made = Issuance(
        client=client,
        family_id="family-1",
        account_id="account-1",
        session_id="session-1",
        scopes=("openid", "email"),
        auth_time=AUTH_TIME,
        nonce="nonce-1",
    )
    return attrs.evolve(made, **changes)


def test_the_access_token_names_its_family_session_and_client() -> None:
    signer = FakeSigner()
    issued = TokenIssuer(signer).tokens(issuance(), NOW, None)
    claims = signer.access_tokens[issued.access_token]
    read = AccessTokenClaims.from_claims(claims)
    assert read == AccessTokenClaims(
        issuer=ISSUER,
        subject="account-1",
        client_id=FIRST,
        scopes=("openid", "email"),
        session_id="session-1",
        family_id="family-1",
        token_id=read.token_id,
        issued_at=NOW,
        expires_at=NOW + dt.timedelta(minutes=10),
        auth_time=AUTH_TIME,
    )
    assert claims["aud"] == FIRST and read.token_id
    assert (issued.expires_in, issued.scopes) == (600, ("openid", "email"))


def test_each_access_token_has_its_own_id() -> None:
    signer = FakeSigner()
    issuer = TokenIssuer(signer)
    first = issuer.tokens(issuance(), NOW, None).access_token
    second = issuer.tokens(issuance(), NOW, None).access_token
    assert signer.access_tokens[first]["jti"] != signer.access_tokens[second]["jti"]


def test_the_id_token_says_who_to_whom_and_when() -> None:
    signer = FakeSigner()
    issued = TokenIssuer(signer).tokens(issuance(), NOW, "refresh-1")
    signed = signer.id_tokens[issued.id_token]
    assert dict(signed.claims) == {
        "iss": ISSUER,
        "sub": "account-1",
        "aud": FIRST,
        "azp": FIRST,
        "iat": int(NOW.timestamp()),
        "exp": int((NOW + dt.timedelta(seconds=300)).timestamp()),
        "sid": "session-1",
        "auth_time": int(AUTH_TIME.timestamp()),
        "nonce": "nonce-1",
        "at_hash": at_hash(issued.access_token),
    }
    assert (signed.algorithm, signed.access_token) == ("RS256", issued.access_token)
    assert issued.refresh_token == "refresh-1"


def test_the_id_token_is_signed_with_the_clients_algorithm() -> None:
    signer = FakeSigner()
    issued = TokenIssuer(signer).tokens(issuance(WEB), NOW, None)
    assert signer.id_tokens[issued.id_token].algorithm == "ES256"
    assert signer.id_tokens[issued.id_token].claims["aud"] == WEB


def test_without_a_nonce_or_a_proven_login_time_neither_is_claimed() -> None:
    signer = FakeSigner()
    issued = TokenIssuer(signer).tokens(
        issuance(nonce=None, auth_time=UNPROVEN_AUTH_TIME), NOW, None
    )
    id_claims = signer.id_tokens[issued.id_token].claims
    assert "nonce" not in id_claims and "auth_time" not in id_claims
    assert "auth_time" not in signer.access_tokens[issued.access_token]


def test_a_refresh_token_starts_the_family_only_with_offline_access() -> None:
    assert first_refresh_token(issuance(), NOW) == (None, None)
    token, record = first_refresh_token(issuance(scopes=("openid", "offline_access")), NOW)
    assert token is not None and record is not None
    assert record.token_hash == token_digest(token) != token
    assert (record.family_id, record.client_id, record.account_id, record.session_id) == (
        "family-1",
        FIRST,
        "account-1",
        "session-1",
    )
    assert (record.scopes, record.auth_time, record.created_at) == (
        ("openid", "offline_access"),
        AUTH_TIME,
        NOW,
    )
    assert record.expires_at == NOW + dt.timedelta(days=7)


def test_a_rotated_refresh_token_keeps_the_scopes_it_is_given() -> None:
    record = refresh_record("token-2", issuance(), ("openid", "email", "offline_access"), NOW)
    assert record.scopes == ("openid", "email", "offline_access")
    assert record.token_hash == token_digest("token-2")
    assert record.replaced_at is None and record.revoked_at is None
