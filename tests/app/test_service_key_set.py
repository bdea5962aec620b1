"""The service's one key set: the session key and, once clients are registered, an RSA key for
the OpenID Provider's ID and access tokens, in the one key file and the one published JWKS.

A file without an RSA key gets one where keys may be created (processes starting together add
exactly one); where they may not, start-up says in one line what is missing. Sessions keep
working as before, and a relying party verifies the provider's tokens with the published set.
"""

from __future__ import annotations

import datetime as dt
import json
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from authgate.adapters.jose import JwtTokenSigner, SessionKeyError, load_or_create_keys
from authgate.adapters.jose.keys import new_rsa_key

from .conftest import MakeService, SignIn

ISSUER = "https://auth.example.com"


def stored(path: Path) -> list[dict[str, Any]]:
    keys: list[dict[str, Any]] = json.loads(path.read_text())["keys"]
    return keys


def test_a_fresh_file_has_the_rsa_key_when_it_is_needed(tmp_path: Path) -> None:
    path = tmp_path / "var" / "keys.json"
    keys = load_or_create_keys(path, create=True, rsa=True)
    assert [k.key_type for k in keys.keys] == ["EC", "RSA"]
    ec, rsa = stored(path)
    assert rsa["alg"] == "RS256" and rsa["use"] == "sig" and "d" in rsa and rsa["created"]
    assert ec["kid"] and rsa["kid"] and ec["kid"] != rsa["kid"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Without clients nothing changes: a session key alone, as before.
    alone = tmp_path / "alone.json"
    assert [k.key_type for k in load_or_create_keys(alone, create=True).keys] == ["EC"]


def test_a_file_without_an_rsa_key_gets_one_where_keys_may_be_created(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    load_or_create_keys(path, create=True)
    [session] = stored(path)
    load_or_create_keys(path, create=True, rsa=True)
    kept, rsa = stored(path)
    assert kept == session  # the session key as it was, the private part included
    assert rsa["kty"] == "RSA" and rsa["kid"] != session["kid"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["keys.json"]  # nothing left beside it
    # Loaded again, it is not added twice.
    load_or_create_keys(path, create=True, rsa=True)
    assert stored(path) == [kept, rsa]


def test_where_keys_may_not_be_created_the_missing_rsa_key_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    load_or_create_keys(path, create=True)
    before = path.read_text()
    with pytest.raises(SessionKeyError) as e:
        load_or_create_keys(path, create=False, rsa=True)
    assert str(e.value) == (
        f"session key file {path} holds no RSA key, which signs the OpenID Provider's ID and "
        "access tokens (clients are registered): `authgate keys rotate` adds one, or "
        "session.generate_keys: true creates it at start"
    )
    assert path.read_text() == before
    # Without clients the same file loads as before.
    assert len(load_or_create_keys(path, create=False).keys) == 1


def test_processes_starting_together_add_one_rsa_key(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    load_or_create_keys(path, create=True)
    script = (
        "import sys\n"
        "from authgate.adapters.jose import load_or_create_keys\n"
        "keys = load_or_create_keys(sys.argv[1], create=True, rsa=True)\n"
        "print(next(k.kid for k in keys.keys if k.key_type == 'RSA'))\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    kids = {proc.communicate(timeout=60)[0].strip() for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    rsa = [k for k in stored(path) if k["kty"] == "RSA"]
    assert len(rsa) == 1 and kids == {rsa[0]["kid"]}


@pytest.mark.parametrize(
    ("name", "change", "problem"),
    [
        pytest.param(
            "a short RSA key",
            lambda keys: [*keys, _short_rsa_key()],
            "every key must be a private EC (P-256), OKP (Ed25519) or RSA (at least 2048 bits) "
            "key with a kid",
            marks=pytest.mark.filterwarnings("ignore:Key size should be"),
        ),
        (
            "an RSA key without its private part",
            lambda keys: [*keys, new_rsa_key().as_dict(private=False)],
            "every key must be a private EC (P-256), OKP (Ed25519) or RSA (at least 2048 bits) "
            "key with a kid",
        ),
        (
            "an RSA key alone",
            lambda keys: [k for k in keys if k["kty"] == "RSA"],
            "no EC or OKP key to sign sessions",
        ),
        (
            "two keys with one kid",
            lambda keys: [keys[0], {**keys[1], "kid": keys[0]["kid"]}],
            "every key needs a kid of its own",
        ),
        (
            "an empty kid",
            lambda keys: [keys[0], {**keys[1], "kid": ""}],
            "every key needs a kid of its own",
        ),
    ],
)
def test_a_key_file_that_cannot_serve_is_one_line(
    tmp_path: Path, name: str, change: Any, problem: str
) -> None:
    path = tmp_path / "keys.json"
    load_or_create_keys(path, create=True, rsa=True)
    path.write_text(json.dumps({"keys": change(stored(path))}))
    with pytest.raises(SessionKeyError) as e:
        load_or_create_keys(path, create=False)
    assert str(e.value) == f"session key file {path}: {problem}"


def _short_rsa_key() -> dict[str, Any]:
    from joserfc.jwk import RSAKey

    return dict(RSAKey.generate_key(1024, parameters={"kid": "short"}).as_dict(private=True))


@pytest.fixture
def rsa_key_file(tmp_path: Path) -> Path:
    """The key file the service below starts on, with an RSA key (as a start with clients
    registered leaves it)."""
    path = tmp_path / "keys.json"
    load_or_create_keys(path, create=True, rsa=True)
    return path


@pytest.fixture
async def signin_on_rsa_keys(rsa_key_file: Path, signin: SignIn) -> SignIn:
    return signin


async def test_the_published_set_carries_every_key_and_sessions_work_as_before(
    signin_on_rsa_keys: SignIn, rsa_key_file: Path
) -> None:
    flow = signin_on_rsa_keys
    answer = await flow.client.get("/.well-known/jwks.json")
    assert answer.status == 200
    assert answer.headers["Cache-Control"] == "public, max-age=60"
    published = await answer.json()
    ec, rsa = published["keys"]
    session_key, rsa_key = stored(rsa_key_file)
    assert ec == {
        "kty": "EC",
        "crv": "P-256",
        "x": session_key["x"],
        "y": session_key["y"],
        "kid": session_key["kid"],
        "use": "sig",
        "alg": "ES256",
    }
    assert rsa == {
        "kty": "RSA",
        "n": rsa_key["n"],
        "e": rsa_key["e"],
        "kid": rsa_key["kid"],
        "use": "sig",
        "alg": "RS256",
    }
    key_set = KeySet.import_key_set(published)

    # A session is signed by the session key, and works as before.
    answer = await flow.complete("google", intent="register")
    session = answer.cookies["session"].value
    header = json.loads(_b64(session.split(".")[0]))
    assert header["alg"] == "ES256" and header["kid"] == session_key["kid"]
    account = await flow.client.get("/v1/account", headers={"Authorization": f"Bearer {session}"})
    assert account.status == 200
    # An RS256 token with the session's claims is no session: sessions are ES256 or EdDSA.
    signer = JwtTokenSigner(load_or_create_keys(rsa_key_file, create=False), issuer=ISSUER)
    now = int(time.time())
    forged = jwt.encode(
        {"alg": "RS256", "kid": rsa_key["kid"]},
        jwt.decode(session, key_set).claims,
        load_or_create_keys(rsa_key_file, create=False).get_by_kid(rsa_key["kid"]),
    )
    refused = await flow.client.get("/v1/account", headers={"Authorization": f"Bearer {forged}"})
    assert refused.status == 401

    # A relying party verifies the provider's ID token with the published key set.
    id_token = signer.id_token(
        {"sub": "account-1", "aud": "web", "iat": now, "exp": now + 300}, access_token="at"
    )
    claims = jwt.decode(id_token, key_set, algorithms=["RS256"]).claims
    assert claims["iss"] == ISSUER and claims["aud"] == "web"
    es256 = signer.id_token(
        {"sub": "account-1", "aud": "web", "iat": now, "exp": now + 300}, algorithm="ES256"
    )
    assert jwt.decode(es256, key_set, algorithms=["ES256"]).claims["sub"] == "account-1"
    assert signer.verify_id_token(id_token).expires_at == dt.datetime.fromtimestamp(
        now + 300, dt.UTC
    )


async def test_without_clients_the_published_set_is_the_session_key_alone(
    make_service: MakeService,
) -> None:
    client = await make_service()
    keys = (await (await client.get("/.well-known/jwks.json")).json())["keys"]
    assert [k["kty"] for k in keys] == ["EC"]


def _b64(part: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
