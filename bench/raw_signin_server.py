"""The raw floor of bench/signin_bench.py: complete sign-ins with no framework.

    python bench/raw_signin_server.py --config FILE [--pool authgate|asyncpg]

A hand-written aiohttp + asyncpg server for provider ``google`` (OpenID Connect), reading the
YAML that bench/harness.py's ``service_config`` writes, on authgate's own schema (``authgate
migrate``). It does per sign-in the protocol work authgate does, and no less:

* ``GET /v1/auth/google``: the provider and ``redirect_uri`` checked against the allowed
  callback addresses, ``intent`` login or register; a random state (256 bits), PKCE verifier
  and S256 challenge, nonce, binding secret (cookie ``__Host-authgate_binding``); ONE INSERT
  of the pending sign-in (keyed by SHA-256 of provider and state, and of the binding, as
  src/adapters/sql/state.py); the authorization URL; the JSON answer (spec 2.4).
* ``GET /v1/auth/google/callback``: ONE ``DELETE ... RETURNING`` of the pending sign-in by
  provider, state and binding hash, expiry checked; the token request (client_secret_post,
  with the PKCE verifier) on one shared ClientSession; the RS256 ID token verified with
  ``cryptography`` against the JWKS fetched once at start-up (kid, alg, iss, aud, azp, exp,
  iat, nonce, sub, email_verified); ONE read of the identity and its account (disabled
  identities refused); ONE statement of writes: for a login the last sign-in time, the
  session's record and the audit event, for a registration the account and primary identity
  too (as src/adapters/postgres/unit.py combines them); an ES256 session JWT with
  authgate's claims; 302 to the onboarding or dashboard page with the ``session`` cookie.
* ``GET /health/liveness``.

Skipped, being operational or outside the benchmark's path: access log, logging of audit and
security events, metrics, tracing, rate limits, CORS, request parameter validation beyond
the above (no OpenAPI operation layer, no return_to, link or reauthenticate intents, no
caller-chosen state, no form_post callback, no RFC 9207 ``iss`` check, no provider ``error``
answers), the error pages and login redirects of failures (a failure answers a bare 400),
key rotation of the JWKS (unknown kid: refused), discovery refresh, userinfo fallback,
provider-token sealing (the benchmark configures no keys), the retry of a lost registration
race, purges of expired rows, the session key file (an ephemeral P-256 key), readiness.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import hmac
import json
import secrets
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import uvloop
import yaml
from aiohttp import web
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from bench.raw_pool import DEFAULT_POOL, POOLS, open_raw_pool

PROVIDER = "google"
BINDING_COOKIE = "__Host-authgate_binding"
PROFILE_CLAIMS = ("name", "given_name", "family_name", "picture", "locale", "email")
PROFILE_CLAIMS += ("email_verified", "is_private_email")
LEEWAY = 60

PUT_STATE = """
    INSERT INTO sign_in_states (lookup, provider, redirect_uri, intent, code_verifier, nonce,
        binding_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
"""
TAKE_STATE = """
    DELETE FROM sign_in_states WHERE lookup = $1 AND binding_hash = $2
    RETURNING redirect_uri, intent, code_verifier, nonce, expires_at
"""
# The same row as authgate's find_with_identity (src/adapters/sql/accounts.py).
FIND = """
    SELECT i.account_id, i.provider, i.subject, i.email AS identity_email, i.linked_at,
        i.is_primary, i.email_verified AS identity_email_verified, i.disabled_reason,
        i.email_disabled, a.id, a.email, a.name, a.created_at, a.last_login_at, a.email_verified
    FROM identities i JOIN accounts a ON a.id = i.account_id
    WHERE i.provider = $1 AND i.subject = $2
"""
# $1 account, $2 now, $3 provider, sessions: $4 id, $5 expires, $6 absolute, $7 address,
# $8 user agent, $9 provider session; event: $10 outcome
SESSION_AND_EVENT = """
    s AS (INSERT INTO sessions (id, account_id, provider, created_at, expires_at,
        absolute_expires_at, auth_time, client_address, user_agent, provider_session)
        VALUES ($4, $1::text, $3, $2, $5, $6, $2, $7, $8, $9))
    INSERT INTO sign_in_events (at, provider, outcome, client_address, user_agent, account_id)
    VALUES ($2, $3, $10, $7, $8, $1::text)
"""
LOGIN = (
    "WITH a AS (UPDATE accounts SET last_login_at = $2 WHERE id = $1::uuid), " + SESSION_AND_EVENT
)
# and $11 email, $12 name, $13 profile, $14 email verified, $15 subject
REGISTER = (
    """WITH a AS (INSERT INTO accounts (id, email, name, profile, created_at, email_verified,
        last_login_at) VALUES ($1::uuid, $11, $12, $13::jsonb, $2, $14, $2)),
    i AS (INSERT INTO identities (provider, subject, account_id, email, linked_at, is_primary,
        email_verified) VALUES ($3, $15, $1::uuid, $11, $2, true, $14)), """
    + SESSION_AND_EVENT
)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Refused(Exception):
    """The callback cannot sign in (answered 400)."""


class RawSignIn:
    def __init__(self, config: dict[str, Any], pool: str = DEFAULT_POOL) -> None:
        google = config["providers"][PROVIDER]
        self.client_id: str = google["client_id"]
        self.client_secret: str = google["client_secret"]
        self.issuer: str = google["issuer"]
        self.scope = " ".join(google["scopes"])
        app = config["app"]
        self.callbacks = frozenset(app["callback_urls"])
        self.app_url: str = app["url"].rstrip("/")
        self.sessions = SessionSigner(config["session"], PROVIDER)
        self.session_ttl = self.sessions.ttl
        self.state_ttl = int(config.get("state", {}).get("ttl_seconds", 600))
        self.database_url: str = config["database"]["url"]
        self.pool_max = int(config["database"].get("pool_max_size", 10))
        self.pool_kind = pool
        self.keys: dict[str, rsa.RSAPublicKey] = {}

    async def open(self, app: web.Application) -> None:
        self.pool = await open_raw_pool(self.pool_kind, self.database_url, max_size=self.pool_max)
        self.http = aiohttp.ClientSession()
        url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
        async with self.http.get(url) as response:
            discovery = await response.json()
        self.authorization_endpoint: str = discovery["authorization_endpoint"]
        self.token_endpoint: str = discovery["token_endpoint"]
        async with self.http.get(discovery["jwks_uri"]) as response:
            for jwk in (await response.json())["keys"]:
                if jwk["kty"] == "RSA":
                    numbers = rsa.RSAPublicNumbers(
                        int.from_bytes(unb64url(jwk["e"]), "big"),
                        int.from_bytes(unb64url(jwk["n"]), "big"),
                    )
                    self.keys[jwk["kid"]] = numbers.public_key()

    async def close(self, app: web.Application) -> None:
        await self.http.close()
        await self.pool.close()

    async def start(self, request: web.Request) -> web.Response:
        query = request.query
        redirect_uri = query.get("redirect_uri")
        intent = query.get("intent", "login")
        if request.match_info["provider"] != PROVIDER or redirect_uri not in self.callbacks:
            return web.Response(status=400, text="bad provider or redirect_uri")
        if intent not in ("login", "register"):
            return web.Response(status=400, text="bad intent")
        state, verifier, nonce = (secrets.token_urlsafe(n) for n in (32, 48, 32))
        binding = secrets.token_urlsafe(32)
        challenge = b64url(hashlib.sha256(verifier.encode()).digest())
        now = dt.datetime.now(dt.UTC)
        lookup = sha256_hex(f"{PROVIDER}\0{state}")
        expires = now + dt.timedelta(seconds=self.state_ttl)
        args = (lookup, PROVIDER, redirect_uri, intent, verifier, nonce, sha256_hex(binding))
        await self.pool.execute(PUT_STATE, *args, now, expires)
        params = {
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "scope": self.scope,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "nonce": nonce,
        }
        body = {
            "provider": PROVIDER,
            "authorizationUrl": f"{self.authorization_endpoint}?{urlencode(params)}",
            "clientId": self.client_id,
            "scopes": self.scope.split(),
            "responseType": "code",
            "state": state,
        }
        response = web.json_response(body, headers={"Cache-Control": "no-store"})
        response.set_cookie(
            BINDING_COOKIE, binding, max_age=self.state_ttl, path="/", secure=True,
            httponly=True, samesite="None",
        )  # fmt: skip
        return response

    async def callback(self, request: web.Request) -> web.Response:
        try:
            return await self._callback(request)
        except Refused as e:
            return web.Response(status=400, text=str(e))

    async def _callback(self, request: web.Request) -> web.Response:
        code, state = request.query.get("code"), request.query.get("state")
        binding = request.cookies.get(BINDING_COOKIE)
        if request.match_info["provider"] != PROVIDER or not code or not state or not binding:
            raise Refused("bad callback")
        now = dt.datetime.now(dt.UTC)
        pending = await self.pool.fetchrow(
            TAKE_STATE, sha256_hex(f"{PROVIDER}\0{state}"), sha256_hex(binding)
        )
        if pending is None or pending["expires_at"] <= now:
            raise Refused("invalid_state")
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending["redirect_uri"],
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "code_verifier": pending["code_verifier"],
        }
        headers = {"Accept": "application/json"}
        async with self.http.post(self.token_endpoint, data=form, headers=headers) as response:
            answer = await response.json()
            if response.status != 200 or not isinstance(answer, dict):
                raise Refused("token_exchange_failed")
        if not answer.get("access_token") or str(answer.get("token_type")).lower() != "bearer":
            raise Refused("token_exchange_failed")
        claims = self.verify_id_token(answer.get("id_token"), pending["nonce"])
        subject = claims["sub"]
        found = await self.pool.fetchrow(FIND, PROVIDER, subject)
        if found is not None and found["disabled_reason"] is not None:
            raise Refused("identity_disabled")
        session_id = uuid.uuid4().hex
        expires = now + dt.timedelta(seconds=self.session_ttl)
        absolute = now + dt.timedelta(seconds=self.sessions.absolute_max)
        sid = claims.get("sid") if isinstance(claims.get("sid"), str) else None
        common = (
            now, PROVIDER, session_id, expires, absolute, request.remote,
            request.headers.get("User-Agent", "")[:512] or None, sid,
        )  # fmt: skip
        if found is not None:
            account_id = found["account_id"]
            await self.pool.execute(LOGIN, str(account_id), *common, "signed_in")
            destination = self.app_url + "/dashboard"
        elif pending["intent"] == "register":
            account_id = uuid.uuid4()
            email = claims.get("email") if "@" in str(claims.get("email")) else None
            name = claims.get("name").strip() if isinstance(claims.get("name"), str) else None
            profile = json.dumps({k: claims[k] for k in PROFILE_CLAIMS if k in claims})
            verified = email is not None and claims.get("email_verified") is True
            args = (email, name or None, profile, verified, subject)
            await self.pool.execute(REGISTER, str(account_id), *common, "registered", *args)
            destination = self.app_url + "/onboarding"
        else:
            raise Refused("account_not_found")
        token = self.sessions.token(str(account_id), session_id, int(now.timestamp()))
        response = web.Response(
            status=302,
            headers={
                "Location": destination,
                "Cache-Control": "no-store",
                "Referrer-Policy": "no-referrer",
            },
        )
        response.set_cookie(
            "session", token, max_age=self.session_ttl, path="/", secure=True, httponly=True,
            samesite="Lax",
        )  # fmt: skip
        return response

    def verify_id_token(self, token: object, nonce: str) -> dict[str, Any]:
        if not isinstance(token, str) or token.count(".") != 2:
            raise Refused("invalid_id_token")
        head, body, signature = token.split(".")
        header = json.loads(unb64url(head))
        key = self.keys.get(header.get("kid"))
        if header.get("alg") != "RS256" or key is None:
            raise Refused("invalid_id_token")
        try:
            signed = f"{head}.{body}".encode()
            key.verify(unb64url(signature), signed, padding.PKCS1v15(), hashes.SHA256())
        except Exception:
            raise Refused("invalid_id_token") from None
        claims = json.loads(unb64url(body))
        now = time.time()
        aud = claims.get("aud")
        ok = (
            claims.get("iss") == self.issuer
            and (aud == self.client_id or aud == [self.client_id])
            and claims.get("azp") in (None, self.client_id)
            and isinstance(claims.get("exp"), int | float)
            and claims["exp"] > now - LEEWAY
            and isinstance(claims.get("iat"), int | float)
            and claims["iat"] <= now + LEEWAY
            and isinstance(claims.get("nonce"), str)
            and hmac.compare_digest(claims["nonce"].encode(), nonce.encode())
            and isinstance(claims.get("sub"), str)
            and 0 < len(claims["sub"]) <= 255
            and claims.get("email_verified") is not False
        )
        if not ok:
            raise Refused("invalid_id_token")
        return claims


class SessionSigner:
    """authgate's session JWT (ES256, with its claims) for ``provider``'s sign-ins, on an
    ephemeral P-256 key, as the configuration's ``session`` section says."""

    def __init__(self, session: dict[str, Any], provider: str) -> None:
        self.issuer: str = session["issuer"]
        self.audience: str = session["audience"]
        self.ttl = int(session.get("ttl_seconds", 86400))
        self.absolute_max = int(session.get("absolute_max_seconds", 30 * 86400))
        self.provider = provider
        self.key = ec.generate_private_key(ec.SECP256R1())
        header = {"typ": "JWT", "alg": "ES256", "kid": uuid.uuid4().hex}
        self.header = b64url(json.dumps(header, separators=(",", ":")).encode())

    def token(self, account_id: str, session_id: str, now: int) -> str:
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": account_id,
            "iat": now,
            "nbf": now,
            "exp": now + self.ttl,
            "jti": uuid.uuid4().hex,
            "sid": session_id,
            "auth_time": now,
            "scope": "account:read account:manage",
            "provider": self.provider,
        }
        payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
        signing_input = f"{self.header}.{payload}"
        der = self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return f"{signing_input}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def serve(app: web.Application, config: dict[str, Any]) -> None:
    """Serve ``app`` on ``rest.host``/``rest.port`` on uvloop, with no access log."""
    rest = config["rest"]
    web.run_app(
        app,
        host=rest["host"],
        port=int(rest["port"]),
        access_log=None,
        print=None,
        loop=uvloop.new_event_loop(),
    )


async def liveness(_: web.Request) -> web.Response:
    return web.Response(text="ok")


def application(server: Any) -> web.Application:
    """An application that opens and closes ``server`` (its ``open`` and ``close``) and
    answers ``GET /health/liveness``; the caller adds the server's routes."""
    app = web.Application()
    app.on_startup.append(server.open)
    app.on_cleanup.append(server.close)
    app.router.add_get("/health/liveness", liveness)
    return app


def run_from_command_line(
    doc: str, build: Callable[[dict[str, Any], str], web.Application]
) -> None:
    """``--config FILE [--pool KIND]``: the application ``build`` makes of the YAML on that
    pool (bench/raw_pool.py), served (:func:`serve`)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--pool", choices=POOLS, default=DEFAULT_POOL)
    args = parser.parse_args()
    with open(args.config) as f:
        config = yaml.safe_load(f)
    serve(build(config, args.pool), config)


def build(config: dict[str, Any], pool: str = DEFAULT_POOL) -> web.Application:
    server = RawSignIn(config, pool)
    app = application(server)
    app.router.add_get("/v1/auth/{provider}", server.start)
    app.router.add_get("/v1/auth/{provider}/callback", server.callback)
    return app


def main() -> None:
    run_from_command_line(__doc__ or "", build)


if __name__ == "__main__":
    main()
