"""The raw floor of bench/passkeys_bench.py: passkey sign-ins with no framework.

    python bench/raw_passkeys_server.py --config FILE [--pool authgate|asyncpg]

A hand-written aiohttp + asyncpg + fido2 server, reading the YAML that bench/harness.py's
``service_config`` writes (with ``passkeys``), on authgate's own schema and rows (``authgate
migrate``; the passkeys are the ones authgate registered). It does per sign-in the protocol
work authgate does, with the same libraries, and no less:

* ``POST /v1/passkeys/authentication/options``: a binding secret (cookie
  ``__Host-authgate_binding``, 256 bits) and a challenge (256 bits); ONE upsert of the
  challenge keyed by the SHA-256 of the binding and the ceremony (as
  src/adapters/sql/passkeys.py); fido2's request options (``Fido2Server
  .authenticate_begin``: empty ``allowCredentials``, user verification required); the JSON
  answer with its timeout.
* ``POST /v1/passkeys/authentication``: ONE ``DELETE ... RETURNING`` of this browser's
  challenge, expiry checked; the response read by fido2 (``AuthenticationResponse
  .from_dict``); ONE read of the passkey by credential id with whether its account has a
  disabled identity (authgate reads the identities in a second statement); the user handle
  checked against the passkey's account; the assertion verified by fido2
  (``authenticate_complete``: type, challenge, origin, RP ID hash, user presence and
  verification, the ES256 signature against the stored COSE key); cross-origin frames
  refused; the sign count checked; ONE statement of writes (the passkey's use, the account's
  last sign-in, the session's record, the audit event, as src/adapters/postgres/unit.py
  combines them); an ES256 session JWT with authgate's claims; the JSON answer with the
  ``session`` cookie.
* ``GET /health/liveness``.

It uses fido2 through the type-hints memo authgate installs
(src/adapters/webauthn/fido2_hints.py), so that the floor is not slowed by what authgate
already avoids. Skipped, being operational or outside the benchmark's path: access log,
logging of audit and security events, metrics, tracing, rate limits, CORS, request validation
beyond the above (no OpenAPI operation layer, no ``returnTo``), the refusals' audit events and
error bodies (a failure answers a bare 400), purges of expired challenges, the session key
file (an ephemeral P-256 key), readiness.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import secrets
import sys
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp import web
from fido2 import cbor
from fido2.cose import CoseKey
from fido2.server import Fido2Server
from fido2.webauthn import (
    AttestationConveyancePreference,
    AttestedCredentialData,
    AuthenticationResponse,
    PublicKeyCredentialRpEntity,
    UserVerificationRequirement,
)

from authgate.adapters.webauthn.fido2_hints import memoize_type_hints
from bench.raw_pool import DEFAULT_POOL, open_raw_pool
from bench.raw_signin_server import (
    BINDING_COOKIE,
    SessionSigner,
    application,
    run_from_command_line,
)

PROVIDER = "passkey"
CEREMONY = "authentication"
CHALLENGE_SECONDS = 300
BINDING_MAX_AGE = 600

PUT_CHALLENGE = """
    INSERT INTO passkey_challenges (binding_hash, ceremony, challenge, account_id, session_id,
        created_at, expires_at)
    VALUES ($1, $2, $3, NULL, NULL, $4, $5)
    ON CONFLICT (binding_hash, ceremony) DO UPDATE SET
        challenge = EXCLUDED.challenge, account_id = NULL, session_id = NULL,
        created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
"""
TAKE_CHALLENGE = """
    DELETE FROM passkey_challenges WHERE binding_hash = $1 AND ceremony = $2
    RETURNING challenge, expires_at
"""
FIND = """
    SELECT p.id, p.account_id, p.public_key, p.sign_count, p.aaguid,
        EXISTS (SELECT 1 FROM identities i
                WHERE i.account_id = p.account_id AND i.disabled_reason IS NOT NULL) AS disabled
    FROM passkeys p WHERE p.credential_id = $1
"""
# $1 account, $2 now, $3 passkey id, $4 sign count, $5 backed up, sessions: $6 id,
# $7 expires, $8 absolute, $9 address, $10 user agent
SIGN_IN = """
    WITH p AS (UPDATE passkeys SET sign_count = $4, backed_up = $5, last_used_at = $2
               WHERE id = $3),
    a AS (UPDATE accounts SET last_login_at = $2 WHERE id = $1::uuid),
    s AS (INSERT INTO sessions (id, account_id, provider, created_at, expires_at,
        absolute_expires_at, auth_time, client_address, user_agent, provider_session)
        VALUES ($6, $1::text, 'passkey', $2, $7, $8, $2, $9, $10, NULL))
    INSERT INTO sign_in_events (at, provider, outcome, client_address, user_agent, account_id,
        detail)
    VALUES ($2, 'passkey', 'signed_in', $9, $10, $1::text, $3)
"""


class Refused(Exception):
    """The sign-in is refused (answered 400)."""


class RawPasskeys:
    def __init__(self, config: dict[str, Any], pool: str = DEFAULT_POOL) -> None:
        passkeys = config["passkeys"]
        self.origins = frozenset(passkeys["origins"])
        rp_name = passkeys.get("rp_name", "authgate")
        self.server = Fido2Server(
            PublicKeyCredentialRpEntity(name=rp_name, id=passkeys["rp_id"]),
            attestation=AttestationConveyancePreference.NONE,
            verify_origin=lambda origin: origin in self.origins,
        )
        memoize_type_hints()
        self.app_url: str = config["app"]["url"].rstrip("/")
        self.sessions = SessionSigner(config["session"], PROVIDER)
        self.database_url: str = config["database"]["url"]
        self.pool_max = int(config["database"].get("pool_max_size", 10))
        self.pool_kind = pool

    async def open(self, app: web.Application) -> None:
        self.pool = await open_raw_pool(self.pool_kind, self.database_url, max_size=self.pool_max)

    async def close(self, app: web.Application) -> None:
        await self.pool.close()

    async def options(self, request: web.Request) -> web.Response:
        binding = secrets.token_urlsafe(32)
        challenge = os.urandom(32)
        now = dt.datetime.now(dt.UTC)
        expires = now + dt.timedelta(seconds=CHALLENGE_SECONDS)
        await self.pool.execute(PUT_CHALLENGE, _hash(binding), CEREMONY, challenge, now, expires)
        options, _ = self.server.authenticate_begin(
            credentials=[],
            user_verification=UserVerificationRequirement.REQUIRED,
            challenge=challenge,
        )
        body = {**dict(options.public_key), "timeout": CHALLENGE_SECONDS * 1000}
        response = web.json_response(body, headers={"Cache-Control": "no-store"})
        response.set_cookie(
            BINDING_COOKIE, binding, max_age=BINDING_MAX_AGE, path="/", secure=True,
            httponly=True, samesite="None",
        )  # fmt: skip
        return response

    async def authenticate(self, request: web.Request) -> web.Response:
        try:
            return await self._authenticate(request)
        except Refused as e:
            return web.Response(status=400, text=str(e))

    async def _authenticate(self, request: web.Request) -> web.Response:
        binding = request.cookies.get(BINDING_COOKIE)
        if not binding:
            raise Refused("binding cookie absent")
        now = dt.datetime.now(dt.UTC)
        taken = await self.pool.fetchrow(TAKE_CHALLENGE, _hash(binding), CEREMONY)
        if taken is None or taken["expires_at"] <= now:
            raise Refused("invalid_state")
        try:
            body = json.loads(await request.read())
            read = AuthenticationResponse.from_dict(body)
        except Exception:
            raise Refused("invalid_passkey_response") from None
        found = await self.pool.fetchrow(FIND, bytes(read.raw_id))
        if found is None:
            raise Refused("unknown_passkey")
        handle = read.response.user_handle
        if handle is not None and bytes(handle) != str(found["account_id"]).encode():
            raise Refused("passkey_not_verified")
        if found["disabled"]:
            raise Refused("account_disabled")
        if read.response.client_data.cross_origin:
            raise Refused("passkey_not_verified")
        _, state = self.server.authenticate_begin(
            user_verification=UserVerificationRequirement.REQUIRED,
            challenge=bytes(taken["challenge"]),
        )
        credential = AttestedCredentialData.create(
            uuid.UUID(found["aaguid"]).bytes,
            bytes(read.raw_id),
            CoseKey.parse(cbor.decode(bytes(found["public_key"]))),
        )
        try:
            self.server.authenticate_complete(state, [credential], read)
        except Exception:
            raise Refused("passkey_not_verified") from None
        auth_data = read.response.authenticator_data
        counter = auth_data.counter
        if (counter or found["sign_count"]) and counter <= found["sign_count"]:
            raise Refused("passkey_counter_regressed")
        account_id = found["account_id"]
        session_id = uuid.uuid4().hex
        expires = now + dt.timedelta(seconds=self.sessions.ttl)
        absolute = now + dt.timedelta(seconds=self.sessions.absolute_max)
        agent = request.headers.get("User-Agent", "")[:512] or None
        await self.pool.execute(
            SIGN_IN, str(account_id), now, found["id"], counter, auth_data.is_backed_up(),
            session_id, expires, absolute, request.remote, agent,
        )  # fmt: skip
        token = self.sessions.token(str(account_id), session_id, int(now.timestamp()))
        answer = {
            "accountId": str(account_id),
            "redirectTo": self.app_url + "/dashboard",
            "sessionExpiresAt": expires.isoformat().replace("+00:00", "Z"),
        }
        response = web.json_response(answer, headers={"Cache-Control": "no-store"})
        response.set_cookie(
            "session", token, max_age=self.sessions.ttl, path="/", secure=True, httponly=True,
            samesite="Lax",
        )  # fmt: skip
        return response


def _hash(binding: str) -> str:
    return hashlib.sha256(binding.encode()).hexdigest()


def build(config: dict[str, Any], pool: str = DEFAULT_POOL) -> web.Application:
    server = RawPasskeys(config, pool)
    app = application(server)
    app.router.add_post("/v1/passkeys/authentication/options", server.options)
    app.router.add_post("/v1/passkeys/authentication", server.authenticate)
    return app


def main() -> None:
    run_from_command_line(__doc__ or "", build)


if __name__ == "__main__":
    main()
