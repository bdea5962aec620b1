"""GET /v1/account/providers: bearer verification, scopes and the response shape (spec 4.4)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import time
from pathlib import Path

from joserfc import jwt
from joserfc.jwk import ECKey, KeySet

from authgate.adapters.jose import JwtSessionTokens, load_or_create_keys
from authgate.domain.model import SessionRecord
from authgate.entrypoints.app.build import RESOURCES

from .conftest import Client, MakeService

SESSION_ID = "test-session-1"

PATH = "/v1/account/providers"


def tokens(tmp_path: Path) -> JwtSessionTokens:
    keys = load_or_create_keys(tmp_path / "keys.json", create=False)
    return JwtSessionTokens(keys, issuer="authgate", audience="authgate", ttl=dt.timedelta(hours=1))


def signed(tmp_path: Path, claims: dict[str, object], key: ECKey | None = None) -> str:
    keys = load_or_create_keys(tmp_path / "keys.json", create=False)
    signing = key or keys.keys[0]
    header = {"alg": "ES256", "kid": signing.kid}
    return jwt.encode(header, claims, signing)


def claims(**overrides: object) -> dict[str, object]:
    now = int(time.time())
    base: dict[str, object] = {
        "iss": "authgate",
        "aud": "authgate",
        "sub": "acct-1",
        "sid": SESSION_ID,
        "iat": now,
        "exp": now + 600,
        "scope": "account:read account:manage",
    }
    base.update(overrides)
    return base


def flip(segment: str) -> str:
    """The segment with one character (one byte of the signature) changed."""
    middle = len(segment) // 2
    return segment[:middle] + ("A" if segment[middle] != "A" else "B") + segment[middle + 1 :]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


async def live_session(client: Client, account_id: str = "acct-1", sid: str = SESSION_ID) -> None:
    """A session the service recorded, as a sign-in does (tokens are accepted only for a
    live recorded session)."""
    now = dt.datetime.now(dt.UTC)
    await client.app[RESOURCES].stores.session_records.add(
        SessionRecord(
            id=sid,
            account_id=account_id,
            provider="google",
            created_at=now,
            expires_at=now + dt.timedelta(hours=1),
            absolute_expires_at=now + dt.timedelta(days=30),
            auth_time=now,
        )
    )


async def test_valid_session_token_lists_nothing_for_an_account_without_links(
    make_service: MakeService, tmp_path: Path
) -> None:
    client = await make_service()
    issued = tokens(tmp_path).issue("acct-1", "google", dt.datetime.now(dt.UTC))
    await live_session(client, sid=issued.session_id)
    token = issued.token
    response = await client.get(PATH, headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200
    assert await response.json() == {"providers": []}


async def test_either_scope_is_enough(make_service: MakeService, tmp_path: Path) -> None:
    client = await make_service()
    await live_session(client)
    for scope in ("account:read", "account:manage", "other account:read"):
        token = signed(tmp_path, claims(scope=scope))
        response = await client.get(PATH, headers={"Authorization": f"Bearer {token}"})
        assert response.status == 200, scope


async def test_token_without_either_scope_is_403_insufficient_scope(
    make_service: MakeService, tmp_path: Path
) -> None:
    client = await make_service()
    await live_session(client)
    token = signed(tmp_path, claims(scope="profile"))
    response = await client.get(PATH, headers={"Authorization": f"Bearer {token}"})
    assert response.status == 403
    assert (await response.json())["error"] == "insufficient_scope"


async def test_missing_malformed_forged_and_expired_tokens_are_401_unauthorized(
    make_service: MakeService, tmp_path: Path
) -> None:
    client = await make_service()
    good = signed(tmp_path, claims())
    header, payload, signature = good.split(".")
    keys = load_or_create_keys(tmp_path / "keys.json", create=False)
    public_pem = keys.keys[0].as_pem(private=False)
    hs_header = b64(json.dumps({"alg": "HS256", "kid": keys.keys[0].kid}).encode())
    hs_signature = b64(
        hmac.new(public_pem, f"{hs_header}.{payload}".encode(), hashlib.sha256).digest()
    )
    tampered_payload = b64(json.dumps(claims(sub="someone-else")).encode())
    foreign_key = ECKey.generate_key("P-256", parameters={"kid": keys.keys[0].kid})
    cases = {
        "missing": None,
        "not bearer": f"Basic {good}",
        "empty bearer": "Bearer ",
        "garbage": "Bearer not.a.jwt",
        "expired": "Bearer "
        + signed(tmp_path, claims(iat=int(time.time()) - 7200, exp=int(time.time()) - 3600)),
        "future iat": "Bearer "
        + signed(tmp_path, claims(iat=int(time.time()) + 3600, exp=int(time.time()) + 7200)),
        "wrong issuer": "Bearer " + signed(tmp_path, claims(iss="someone")),
        "wrong audience": "Bearer " + signed(tmp_path, claims(aud="other")),
        "alg none": "Bearer "
        + b64(json.dumps({"alg": "none", "kid": keys.keys[0].kid}).encode())
        + "."
        + payload
        + ".",
        "HS256 with the public key": f"Bearer {hs_header}.{payload}.{hs_signature}",
        "tampered payload": f"Bearer {header}.{tampered_payload}.{signature}",
        "one byte changed": f"Bearer {header}.{payload}.{flip(signature)}",
        "foreign key, same kid": "Bearer " + signed(tmp_path, claims(), key=foreign_key),
    }
    for name, value in cases.items():
        headers = {} if value is None else {"Authorization": value}
        response = await client.get(PATH, headers=headers)
        assert response.status == 401, name
        body = await response.json()
        assert body["error"] == "unauthorized", name
        assert body["message"], name
        assert response.headers["WWW-Authenticate"].startswith("Bearer"), name


async def test_session_keys_are_published_without_private_parts(make_service: MakeService) -> None:
    client = await make_service()
    response = await client.get("/.well-known/jwks.json")
    assert response.status == 200
    body = await response.json()
    assert len(body["keys"]) == 1
    key = body["keys"][0]
    assert key["kty"] == "EC" and key["alg"] == "ES256" and key["kid"]
    assert "d" not in key
    KeySet.import_key_set(body)  # a verifier elsewhere can load it
