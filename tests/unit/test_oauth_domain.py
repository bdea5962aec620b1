"""The OpenID Provider's pure rules: what is stored of a token, PKCE S256 (RFC 7636) and the
records' own checks."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from authgate.domain.openid.records import (
    CODE_MAX_LIFETIME,
    AccessTokenClaims,
    AuthorizationCode,
    RefreshToken,
    TokenFamily,
    is_code_verifier,
    pkce_matches,
    token_digest,
)
from authgate.domain.secrets import pkce_challenge
from tests.support.records import T0, at

MINUTE = dt.timedelta(minutes=1)


def code(account_id: str, expires_at: dt.datetime = T0 + MINUTE, **kw: Any) -> AuthorizationCode:
    fields: dict[str, Any] = {
        "client_id": "web",
        "session_id": "sid-1",
        "redirect_uri": "https://app.example/callback",
        "scopes": ("openid",),
        "nonce": None,
        "code_challenge": "x",
        "auth_time": T0,
        "created_at": T0,
    }
    fields.update(kw)
    return AuthorizationCode("h", account_id=account_id, expires_at=expires_at, **fields)


# RFC 7636 appendix B.
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_a_token_is_stored_as_its_sha256_in_base64url() -> None:
    # sha256("abc"), base64url without padding.
    assert token_digest("abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
    assert token_digest("abd") != token_digest("abc")


def test_pkce_s256_matches_the_rfc_example() -> None:
    assert pkce_matches(VERIFIER, CHALLENGE)
    assert not pkce_matches(VERIFIER, CHALLENGE[:-1] + "N")
    assert not pkce_matches(VERIFIER[:-1] + "l", CHALLENGE)


def test_plain_pkce_is_never_accepted() -> None:
    assert not pkce_matches(VERIFIER, VERIFIER)


@pytest.mark.parametrize(
    ("verifier", "valid"),
    [
        ("a" * 43, True),
        ("a" * 128, True),
        ("A-._~z09" * 6, True),
        ("a" * 42, False),  # too short
        ("a" * 129, False),  # too long
        ("a" * 42 + "+", False),  # not unreserved
        ("a" * 42 + "=", False),
        ("a" * 42 + "é", False),
        ("a" * 43 + "\n", False),
    ],
)
def test_a_code_verifier_has_rfc_7636_syntax(verifier: str, valid: bool) -> None:
    assert is_code_verifier(verifier) is valid


def test_a_malformed_verifier_never_matches_and_odd_challenges_do_not_raise() -> None:
    short = "a" * 42
    assert not pkce_matches(short, pkce_challenge(short))
    assert not pkce_matches(VERIFIER, "ünïcode")
    assert not pkce_matches(VERIFIER, "")


def test_a_code_lives_at_most_a_minute() -> None:
    assert code("acct", expires_at=T0 + CODE_MAX_LIFETIME).live(T0 + CODE_MAX_LIFETIME / 2)
    assert not code("acct").live(T0 + CODE_MAX_LIFETIME)
    with pytest.raises(ValueError, match="at most"):
        code("acct", expires_at=T0 + CODE_MAX_LIFETIME + dt.timedelta(microseconds=1))
    with pytest.raises(ValueError, match="at most"):
        code("acct", expires_at=T0)


def test_scopes_are_kept_as_given_in_order() -> None:
    assert code("acct", scopes=["openid", "email"]).scopes == ("openid", "email")


def test_a_refresh_token_is_current_until_replaced_revoked_or_expired() -> None:
    token = RefreshToken("h", "f", "web", "acct", "sid", ("openid",), T0, T0, at(100))
    assert token.current(at(99))
    assert not token.current(at(100))
    assert not RefreshToken(
        "h", "f", "web", "acct", "sid", (), T0, T0, at(100), replaced_at=at(1)
    ).current(at(2))
    assert not RefreshToken(
        "h", "f", "web", "acct", "sid", (), T0, T0, at(100), revoked_at=at(1)
    ).current(at(2))


def test_a_family_is_live_until_revoked_or_expired() -> None:
    family = TokenFamily("f", "web", "acct", "sid", T0, at(100))
    assert family.live(at(99)) and not family.live(at(100))
    assert not TokenFamily("f", "web", "acct", "sid", T0, at(100), at(1)).live(at(2))


def _access_claims() -> AccessTokenClaims:
    issued = dt.datetime(2026, 11, 26, 8, 0, tzinfo=dt.UTC)
    return AccessTokenClaims(
        issuer="https://auth.example.com",
        subject="account-1",
        client_id="web",
        scopes=("openid", "email"),
        session_id="session-1",
        family_id="family-1",
        token_id="jti-1",
        issued_at=issued,
        expires_at=issued + dt.timedelta(minutes=5),
        auth_time=issued - dt.timedelta(minutes=1),
    )


def test_access_token_claims_read_back_as_issued() -> None:
    claims = _access_claims().claims()
    assert claims["aud"] == claims["client_id"] == "web"
    assert claims["scope"] == "openid email"
    assert claims["fam"] == "family-1"
    assert AccessTokenClaims.from_claims(claims) == _access_claims()


@pytest.mark.parametrize("name", ["sub", "client_id", "sid", "fam", "jti", "iat", "exp"])
def test_access_token_claims_without_a_required_claim_are_refused(name: str) -> None:
    claims = _access_claims().claims()
    del claims[name]
    with pytest.raises(ValueError, match=name):
        AccessTokenClaims.from_claims(claims)


def test_access_token_times_must_be_integers() -> None:
    claims = {**_access_claims().claims(), "exp": "1790000000"}
    with pytest.raises(ValueError, match="exp"):
        AccessTokenClaims.from_claims(claims)
