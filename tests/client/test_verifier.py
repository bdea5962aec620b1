"""authgate.client.SessionVerifier against a running ``authgate serve``: real session tokens
from a sign-in through the development provider verify; forged ones do not."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import Callable

import aiohttp
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey

from authgate.client import InvalidSession, KeySetUnavailable, SessionVerifier
from tests.client.support import AUDIENCE, ISSUER, Authgate, b64, claims_of
from tests.support.ports import free_port


def verifier_for(authgate: Authgate, **kwargs: object) -> SessionVerifier:
    options: dict[str, object] = {"issuer": ISSUER, "audience": AUDIENCE, **kwargs}
    return SessionVerifier.for_service(authgate.base, **options)  # type: ignore[arg-type]


async def test_a_real_session_verifies_with_its_account_and_scopes(authgate: Authgate) -> None:
    token = await authgate.sign_in("ada")
    async with verifier_for(authgate) as verifier, aiohttp.ClientSession() as http:
        session = await verifier.verify(token)
        # The account id is the one authgate itself answers for this token.
        async with http.get(
            f"{authgate.base}/v1/account", headers={"Authorization": f"Bearer {token}"}
        ) as r:
            assert r.status == 200, await r.text()
            account = await r.json()
    claims = claims_of(token)
    assert session.account_id == claims["sub"] == account["id"]
    assert session.scopes == {"account:read", "account:manage"}
    assert session.provider == "google"
    assert int(session.expires_at.timestamp()) == claims["exp"]
    assert session.claims["iss"] == ISSUER
    assert session.claims["aud"] == AUDIENCE
    assert session.has_scopes({"account:read"})
    assert not session.has_scopes({"account:read", "admin"})


async def test_the_key_set_is_cached(authgate: Authgate) -> None:
    tokens = [await authgate.sign_in(u) for u in ("ada", "grace")]
    async with verifier_for(authgate) as verifier:
        for _ in range(3):
            for token in tokens:
                await verifier.verify(token)
        assert verifier.keys.fetches == 1


async def test_a_tampered_token_is_refused(authgate: Authgate) -> None:
    token = await authgate.sign_in("ada")
    header, payload, signature = token.split(".")
    claims = claims_of(token) | {"sub": "someone-else"}
    forged_payload = b64(json.dumps(claims).encode())
    flipped = signature[:-4] + ("AAAA" if not signature.endswith("AAAA") else "BBBB")
    async with verifier_for(authgate) as verifier:
        for bad in (f"{header}.{forged_payload}.{signature}", f"{header}.{payload}.{flipped}"):
            with pytest.raises(InvalidSession, match="signature"):
                await verifier.verify(bad)
        for junk in ("", "abc", "a.b", "a.b.c", "a.b.c.d.e", token + "x" * 9000):
            with pytest.raises(InvalidSession):
                await verifier.verify(junk)


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        # Times relative to when the test runs (not when it was collected: a long run would
        # reach "600 s ahead" before this test does).
        (lambda now: {"exp": now - 120}, "expired"),
        (lambda now: {"nbf": now + 600}, "not yet valid"),
        (lambda now: {"iat": now + 600, "nbf": None}, "issued in the future"),
        (lambda now: {"iss": "https://evil.example"}, "iss"),
        (lambda now: {"aud": "another-service"}, "aud"),
        (lambda now: {"sub": None}, "sub"),
        (lambda now: {"exp": None}, "exp"),
    ],
)
async def test_claims_are_checked(
    authgate: Authgate, claims: Callable[[int], dict[str, object]], reason: str
) -> None:
    # Signed with authgate's own key: only the claims are wrong.
    token = authgate.mint(**claims(int(time.time())))
    async with verifier_for(authgate) as verifier:
        assert (await verifier.verify(authgate.mint())).account_id == "acc-minted"
        with pytest.raises(InvalidSession, match=reason):
            await verifier.verify(token)


async def test_leeway_tolerates_small_clock_skew(authgate: Authgate) -> None:
    token = authgate.mint(exp=int(time.time()) - 5)
    async with verifier_for(authgate, leeway_seconds=30) as verifier:
        assert (await verifier.verify(token)).account_id == "acc-minted"
    async with verifier_for(authgate, leeway_seconds=0) as verifier:
        with pytest.raises(InvalidSession, match="expired"):
            await verifier.verify(token)


async def test_a_foreign_key_is_refused(authgate: Authgate) -> None:
    real_kid = authgate.signing_key().kid
    impostor = ECKey.generate_key("P-256", parameters={"kid": real_kid})
    stranger = ECKey.generate_key("P-256", parameters={"kid": "not-authgates"})
    async with verifier_for(authgate) as verifier:
        with pytest.raises(InvalidSession, match="signature"):
            await verifier.verify(authgate.mint(key=impostor))
        with pytest.raises(InvalidSession, match="unknown key"):
            await verifier.verify(authgate.mint(key=stranger))


@pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
async def test_alg_none_and_hmac_are_refused(authgate: Authgate) -> None:
    real = authgate.signing_key()
    public_jwk = json.dumps(real.as_dict(private=False)).encode()
    payload = b64(json.dumps(claims_of(authgate.mint())).encode())
    none_header = b64(json.dumps({"alg": "none", "kid": real.kid}).encode())
    hs_header = b64(json.dumps({"alg": "HS256", "kid": real.kid, "typ": "JWT"}).encode())
    # The classic confusion: the public key (as published) used as the HMAC secret.
    mac = hmac.new(public_jwk, f"{hs_header}.{payload}".encode(), hashlib.sha256).digest()
    ed = OKPKey.generate_key("Ed25519", parameters={"kid": real.kid})
    async with verifier_for(authgate) as verifier:
        for token in (f"{none_header}.{payload}.", f"{hs_header}.{payload}.{b64(mac)}"):
            with pytest.raises(InvalidSession, match="not accepted"):
                await verifier.verify(token)
        # EdDSA is an algorithm authgate may use, but not with this kid's key (an EC key).
        eddsa = jwt.encode(
            {"alg": "EdDSA", "kid": real.kid}, claims_of(authgate.mint()), ed, algorithms=["EdDSA"]
        )
        with pytest.raises(InvalidSession, match="does not sign EdDSA"):
            await verifier.verify(eddsa)
        for alg in ("ES384", "RS256", "PS256"):
            header = b64(json.dumps({"alg": alg, "kid": real.kid}).encode())
            with pytest.raises(InvalidSession, match="not accepted"):
                await verifier.verify(f"{header}.{payload}.{b64(b'x' * 64)}")


async def test_unknown_kids_cost_one_fetch_per_floor(authgate: Authgate) -> None:
    strangers = [ECKey.generate_key("P-256", parameters={"kid": f"k{i}"}) for i in range(20)]
    tokens = [authgate.mint(key=k) for k in strangers]
    async with verifier_for(authgate, min_refetch_seconds=1) as verifier:
        await verifier.verify(authgate.mint())
        assert verifier.keys.fetches == 1
        await asyncio.sleep(1.1)  # past the floor since the first fetch
        results = await asyncio.gather(
            *(verifier.verify(t) for t in tokens), return_exceptions=True
        )
        assert all(isinstance(r, InvalidSession) for r in results)
        # Twenty unknown kids at once: one shared refetch, and none more within the floor.
        assert verifier.keys.fetches == 2
        for token in tokens:
            with pytest.raises(InvalidSession, match="unknown key"):
                await verifier.verify(token)
        assert verifier.keys.fetches == 2


async def test_unreachable_authgate() -> None:
    verifier = SessionVerifier.for_service(
        f"http://127.0.0.1:{free_port()}", issuer=ISSUER, audience=AUDIENCE, timeout_seconds=2
    )
    key = ECKey.generate_key("P-256", parameters={"kid": "k"})
    token = jwt.encode({"alg": "ES256", "kid": "k"}, {"sub": "x"}, key)
    async with verifier:
        with pytest.raises(KeySetUnavailable):
            await verifier.verify(token)
        # Not retried on every request: the floor applies after a failure too.
        with pytest.raises(KeySetUnavailable, match="failed recently"):
            await verifier.verify(token)
        assert verifier.keys.fetches == 1


async def test_a_passed_in_http_session_is_used_and_not_closed(authgate: Authgate) -> None:
    async with aiohttp.ClientSession() as http:
        async with verifier_for(authgate, http=http) as verifier:
            await verifier.verify(authgate.mint())
        assert not http.closed


def test_issuer_and_audience_are_required() -> None:
    with pytest.raises(ValueError, match="issuer and audience"):
        SessionVerifier("http://x/.well-known/jwks.json", issuer="", audience="a")
