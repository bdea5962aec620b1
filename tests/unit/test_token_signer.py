"""The OpenID Provider's signer: ID tokens (RS256 by default, ES256 by choice), RFC 9068 access
tokens and logout tokens on the service's key set, and the verification of its own ID tokens
(``id_token_hint``) and access tokens. Each token is checked as a relying party would, with
joserfc and the published key set."""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey

from authgate.adapters.jose import JwtSessionTokens, JwtTokenSigner
from authgate.adapters.jose.keys import ephemeral_keys, public_jwks
from authgate.adapters.jose.signing import left_half_hash
from authgate.ports.jose import InvalidToken

ISSUER = "https://auth.example.com"
KEYS = ephemeral_keys(rsa=True)
SIGNER = JwtTokenSigner(KEYS, issuer=ISSUER)
PUBLISHED = KeySet.import_key_set(public_jwks(KEYS))  # type: ignore[arg-type]


def header(token: str) -> dict[str, Any]:
    part = token.split(".")[0]
    value: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return value


def id_claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "sub": "account-1",
        "aud": "web",
        "iat": now,
        "exp": now + 300,
        "auth_time": now - 10,
        "sid": "session-1",
        "nonce": "n-0S6_WzA2Mj",
    }
    claims.update(overrides)
    return claims


def access_claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "sub": "account-1",
        "aud": "web",
        "client_id": "web",
        "scope": "openid email",
        "sid": "session-1",
        "jti": "at-1",
        "iat": now,
        "exp": now + 300,
    }
    claims.update(overrides)
    return claims


def kid_of(kty: str) -> str:
    kid = next(k.kid for k in KEYS.keys if k.key_type == kty)
    assert kid is not None
    return kid


def test_an_id_token_is_rs256_with_the_rsa_key_s_kid_by_default() -> None:
    token = SIGNER.id_token(id_claims())
    assert header(token) == {"alg": "RS256", "kid": kid_of("RSA"), "typ": "JWT"}
    # A relying party verifies it with the published key set.
    decoded = jwt.decode(token, PUBLISHED, algorithms=["RS256"])
    assert decoded.claims["iss"] == ISSUER
    assert decoded.claims["sub"] == "account-1" and decoded.claims["nonce"] == "n-0S6_WzA2Mj"


def test_an_id_token_is_es256_for_a_client_that_registered_it() -> None:
    assert SIGNER.supports("ES256") and SIGNER.supports("RS256")
    token = SIGNER.id_token(id_claims(), algorithm="ES256")
    assert header(token) == {"alg": "ES256", "kid": kid_of("EC"), "typ": "JWT"}
    assert jwt.decode(token, PUBLISHED, algorithms=["ES256"]).claims["iss"] == ISSUER


def test_at_hash_is_the_left_half_of_the_access_token_s_sha256() -> None:
    # OpenID Connect Core, appendix A.4 (its access token and at_hash).
    assert left_half_hash("jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y") == "77QmUPtjPfzWtF2AnpK9RQ"
    access = SIGNER.access_token(access_claims())
    for algorithm in ("RS256", "ES256"):
        token = SIGNER.id_token(id_claims(), algorithm=algorithm, access_token=access)  # type: ignore[arg-type]
        claims = jwt.decode(token, PUBLISHED, algorithms=[algorithm]).claims
        assert claims["at_hash"] == left_half_hash(access)


def test_an_access_token_is_an_rfc_9068_jwt() -> None:
    token = SIGNER.access_token(access_claims())
    assert header(token) == {"alg": "RS256", "kid": kid_of("RSA"), "typ": "at+jwt"}
    claims = jwt.decode(token, PUBLISHED, algorithms=["RS256"]).claims
    assert claims["iss"] == ISSUER and claims["client_id"] == "web"


def test_a_logout_token_is_typed_as_one() -> None:
    token = SIGNER.logout_token({"aud": "web", "sid": "session-1", "jti": "l-1", "iat": 1})
    assert header(token) == {"alg": "RS256", "kid": kid_of("RSA"), "typ": "logout+jwt"}


def test_the_signer_stamps_the_issuer_itself() -> None:
    with pytest.raises(ValueError, match="stamps iss"):
        SIGNER.id_token(id_claims(iss="https://evil.example"))


def test_a_key_set_without_an_rsa_key_cannot_sign_for_the_provider() -> None:
    with pytest.raises(ValueError, match="no RSA key"):
        JwtTokenSigner(ephemeral_keys(), issuer=ISSUER)


def test_without_a_p256_key_es256_is_not_offered() -> None:
    rsa_only = KeySet([k for k in KEYS.keys if k.key_type == "RSA"])
    signer = JwtTokenSigner(rsa_only, issuer=ISSUER)
    assert signer.supports("RS256") and not signer.supports("ES256")
    with pytest.raises(ValueError, match="ES256"):
        signer.id_token(id_claims(), algorithm="ES256")


def test_its_own_id_token_verifies_as_a_hint_even_expired() -> None:
    now = int(time.time())
    expired = SIGNER.id_token(id_claims(iat=now - 7200, exp=now - 3600, aud=["web", "api"]))
    hint = SIGNER.verify_id_token(expired)
    assert hint.subject == "account-1"
    assert hint.audiences == ("web", "api")
    assert hint.session_id == "session-1"
    assert hint.expires_at == dt.datetime.fromtimestamp(now - 3600, dt.UTC)
    assert hint.issued_at == dt.datetime.fromtimestamp(now - 7200, dt.UTC)
    assert hint.auth_time == dt.datetime.fromtimestamp(now - 10, dt.UTC)
    es256 = SIGNER.verify_id_token(SIGNER.id_token(id_claims(), algorithm="ES256"))
    assert es256.audiences == ("web",)


def _unsigned(claims: dict[str, Any], kid: str) -> str:
    def b64(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{b64({'alg': 'none', 'kid': kid, 'typ': 'JWT'})}.{b64({'iss': ISSUER, **claims})}."


def _foreign(claims: dict[str, Any], kid: str) -> str:
    """Signed by a key of someone else that names one of ours."""
    other = RSAKey.generate_key(2048)
    return jwt.encode({"alg": "RS256", "kid": kid, "typ": "JWT"}, {"iss": ISSUER, **claims}, other)


def _tampered(token: str) -> str:
    head, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "account-2"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{forged}.{signature}"


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("an access token", lambda: SIGNER.access_token(access_claims())),
        ("a logout token", lambda: SIGNER.logout_token({"aud": "web", "sid": "s", "iat": 1})),
        ("alg none", lambda: _unsigned(id_claims(), kid_of("RSA"))),
        ("another key under our kid", lambda: _foreign(id_claims(), kid_of("RSA"))),
        ("a changed claim", lambda: _tampered(SIGNER.id_token(id_claims()))),
        ("another issuer", lambda: JwtTokenSigner(KEYS, issuer="https://x").id_token(id_claims())),
        ("no sub", lambda: SIGNER.id_token(id_claims(sub=""))),
        ("no aud", lambda: SIGNER.id_token(id_claims(aud=[]))),
        ("a sid that is no string", lambda: SIGNER.id_token(id_claims(sid=5))),
        ("no exp", lambda: SIGNER.id_token({k: v for k, v in id_claims().items() if k != "exp"})),
        ("not a JWT", lambda: "not.a.jwt"),
        ("too long", lambda: "a" * 20000),
    ],
)
def test_what_is_not_its_own_id_token_is_refused(name: str, make: Any) -> None:
    with pytest.raises(InvalidToken):
        SIGNER.verify_id_token(make())


def test_a_session_token_is_not_an_id_token_of_the_provider() -> None:
    # Signed by the same key set, but with the session issuer; and its audience, which the
    # configuration keeps apart from every client_id, is the caller's second check.
    sessions = JwtSessionTokens(
        KEYS, issuer="authgate", audience="authgate", ttl=dt.timedelta(hours=1)
    )
    token = sessions.issue("account-1", "google", dt.datetime.now(dt.UTC)).token
    with pytest.raises(InvalidToken, match="another issuer"):
        SIGNER.verify_id_token(token)


def test_its_own_access_token_verifies_until_it_expires() -> None:
    now = dt.datetime.now(dt.UTC)
    claims = SIGNER.verify_access_token(SIGNER.access_token(access_claims()), now)
    assert claims["client_id"] == "web" and claims["scope"] == "openid email"
    stamp = int(now.timestamp())
    expired = SIGNER.access_token(access_claims(iat=stamp - 600, exp=stamp - 1))
    with pytest.raises(InvalidToken, match="expired"):
        SIGNER.verify_access_token(expired, now)
    future = SIGNER.access_token(access_claims(iat=stamp + 3600, exp=stamp + 4000))
    with pytest.raises(InvalidToken, match="future"):
        SIGNER.verify_access_token(future, now)


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("an ID token", lambda: SIGNER.id_token(id_claims())),
        (
            "an ES256 one",
            lambda: jwt.encode(
                {"alg": "ES256", "kid": kid_of("EC"), "typ": "at+jwt"},
                {"iss": ISSUER, **access_claims()},
                next(k for k in KEYS.keys if isinstance(k, ECKey)),
            ),
        ),
        ("no client_id", lambda: SIGNER.access_token(access_claims(client_id=None))),
        ("no jti", lambda: SIGNER.access_token(access_claims(jti=""))),
        ("an exp that is text", lambda: SIGNER.access_token(access_claims(exp="4102444800"))),
        ("an exp that is a boolean", lambda: SIGNER.access_token(access_claims(exp=True))),
        ("no iat", lambda: SIGNER.access_token(access_claims(iat=None))),
        ("an exp past year 9999", lambda: SIGNER.access_token(access_claims(exp=10**20))),
        ("an iat before year 1", lambda: SIGNER.access_token(access_claims(iat=-(10**12)))),
    ],
)
def test_what_is_not_its_own_access_token_is_refused(name: str, make: Any) -> None:
    with pytest.raises(InvalidToken):
        SIGNER.verify_access_token(make(), dt.datetime.now(dt.UTC))


def test_the_typ_may_carry_the_media_type_prefix() -> None:
    rsa = next(k for k in KEYS.keys if isinstance(k, RSAKey))
    token = jwt.encode(
        {"alg": "RS256", "kid": rsa.kid, "typ": "application/AT+JWT"},
        {"iss": ISSUER, **access_claims()},
        rsa,
    )
    assert SIGNER.verify_access_token(token, dt.datetime.now(dt.UTC))["sub"] == "account-1"
