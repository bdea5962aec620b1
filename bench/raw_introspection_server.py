"""The baseline of bench/openid_bench.py's introspection: a raw aiohttp + asyncpg handler.

    python bench/raw_introspection_server.py PORT DATABASE_URL JWKS_FILE CLIENT SECRET [LOOP] [POOL]

``POST /oauth2/introspect`` with HTTP Basic client authentication (a salted SHA-256 digest
compared in constant time, as authgate keeps client secrets) and ``token`` in a form body: the
access token's RS256 signature checked against the provider's public key (the key set file
authgate publishes), its expiry, then the same two rows authgate reads for an access token
whose session it found live a moment ago (its token family live, its account), on the pool
POOL (bench/raw_pool.py: authgate's own, the default, or asyncpg's of the same size with its
reset query off), and the RFC 7662 answer. No rate limit, no validation of the form beyond
``token``, no error handling, no access log, no metrics.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import sys
from pathlib import Path
from urllib.parse import parse_qs

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp import web
from joserfc import jwt
from joserfc.jwk import KeySet

from bench.raw_pool import DEFAULT_POOL, open_raw_pool
from bench.raw_providers_server import encode, new_event_loop

FAMILY = (
    "SELECT true FROM oauth_token_families "
    "WHERE family_id = $1 AND revoked_at IS NULL AND expires_at > $2"
)
ACCOUNT = (
    "SELECT id, email, name, created_at, last_login_at, email_verified FROM accounts WHERE id = $1"
)


def main(
    port: int,
    database_url: str,
    jwks_file: str,
    client: str,
    secret: str,
    loop: str = "asyncio",
    pool: str = DEFAULT_POOL,
) -> None:
    with open(jwks_file) as f:
        keys = KeySet.import_key_set(json.load(f))
    salt = os.urandom(16)
    digest = hashlib.sha256(salt + secret.encode()).digest()

    async def open_pool(app: web.Application) -> None:
        app["pool"] = await open_raw_pool(pool, database_url)

    async def close_pool(app: web.Application) -> None:
        await app["pool"].close()

    async def introspect(request: web.Request) -> web.Response:
        kind, _, credentials = request.headers.get("Authorization", "").partition(" ")
        name, _, presented = base64.b64decode(credentials).decode().partition(":")
        if kind != "Basic" or name != client:
            raise web.HTTPUnauthorized()
        if not hmac.compare_digest(hashlib.sha256(salt + presented.encode()).digest(), digest):
            raise web.HTTPUnauthorized()
        token = parse_qs((await request.read()).decode())["token"][0]
        claims = jwt.decode(token, keys, algorithms=["RS256"]).claims
        now = dt.datetime.now(dt.UTC)
        if claims["exp"] <= now.timestamp():
            return inactive()
        async with request.app["pool"].acquire() as conn:  # plain reads, no transaction
            live = await conn.fetchval(FAMILY, claims["fam"], now)
            account = await conn.fetchrow(ACCOUNT, claims["sub"]) if live else None
        if account is None:
            return inactive()
        body = {
            "active": True,
            "scope": claims["scope"],
            "client_id": claims["client_id"],
            "sub": claims["sub"],
            "exp": claims["exp"],
            "iat": claims["iat"],
            "iss": claims["iss"],
            "aud": claims["aud"],
            "jti": claims["jti"],
            "sid": claims["sid"],
            "token_type": "access_token",
            "auth_time": claims["auth_time"],
        }
        return answer(body)

    app = web.Application()
    app.on_startup.append(open_pool)
    app.on_cleanup.append(close_pool)
    app.router.add_post("/oauth2/introspect", introspect)
    app.router.add_get("/health/liveness", liveness)
    web.run_app(
        app, host="127.0.0.1", port=port, access_log=None, print=None, loop=new_event_loop(loop)
    )


def answer(body: dict[str, object]) -> web.Response:
    return web.Response(
        body=encode(body).encode(),
        content_type="application/json",
        headers={"Cache-Control": "no-store", "Pragma": "no-cache"},
    )


def inactive() -> web.Response:
    return answer({"active": False})


async def liveness(_: web.Request) -> web.Response:
    return web.Response(text="ok")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], *sys.argv[6:8])
