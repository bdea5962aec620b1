"""For the resource server tests: a real ``authgate serve`` with applications registered whose
client ids are the resource identifiers (an authgate access token's ``aud`` is its client's id,
so a token issued to the client named after a resource is a token for that resource), a real
access token from its authorization code flow, and a stand-in authorization server on loopback
whose keys the tests sign their own tokens with."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import aiohttp
from aiohttp import web
from joserfc import jwt
from joserfc.jwk import ECKey, Key, RSAKey

from tests.client.support import Authgate
from tests.support.ports import free_port

SECRET = "resource-secret-" + "r" * 32
REDIRECT = "http://127.0.0.1:9/cb"  # a confidential client's loopback redirect: never called


def basic(client_id: str) -> dict[str, str]:
    """Basic credentials as RFC 6749 section 2.3.1 has them (each part form-urlencoded: a
    client id that is a URL holds a colon)."""
    pair = f"{quote(client_id, safe='')}:{quote(SECRET, safe='')}"
    return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}


def resource_client(name: str) -> dict[str, Any]:
    """A first-party confidential application (no consent page) that may introspect."""
    return {
        "name": name,
        "type": "confidential",
        "secrets": [SECRET],
        "redirect_uris": [REDIRECT],
        "first_party": True,
        "introspection": True,
    }


def authgate_for(tmp_path: Path, *resources: str) -> Authgate:
    """``authgate serve`` with one application per resource identifier (its client id), and
    ``other``, an application of no resource here."""
    clients = {r: resource_client(f"Resource {i}") for i, r in enumerate(resources)}
    clients["other"] = resource_client("Other")
    return Authgate(tmp_path, {"clients": clients})


def issuer_of(authgate: Authgate) -> str:
    """authgate's issuer: without ``rest.public_url``, the address it listens on."""
    return authgate.base


async def access_token(authgate: Authgate, client_id: str, scope: str = "openid profile") -> str:
    """Sign Ada in, then run the authorization code flow (PKCE) for ``client_id`` as a browser
    and the application would: authgate's access token."""
    session = await authgate.sign_in("ada")
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": scope,
        "state": secrets.token_urlsafe(16),
        "nonce": secrets.token_urlsafe(16),
        "code_challenge": challenge.rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        async with http.get(
            f"{authgate.base}/oauth2/authorize",
            params=params,
            headers={"Cookie": f"session={session}", "Accept": "text/html"},
            allow_redirects=False,
        ) as r:
            assert r.status == 302, await r.text()
            answer = dict(parse_qsl(urlsplit(r.headers["Location"]).query))
        assert "code" in answer, answer
        async with http.post(
            f"{authgate.base}/oauth2/token",
            data={
                "grant_type": "authorization_code",
                "code": answer["code"],
                "redirect_uri": REDIRECT,
                "code_verifier": verifier,
            },
            headers=basic(client_id),
        ) as r:
            assert r.status == 200, await r.text()
            token: str = (await r.json())["access_token"]
    return token


async def revoke(authgate: Authgate, client_id: str, token: str) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{authgate.base}/oauth2/revoke",
            data={"token": token},
            headers=basic(client_id),
        ) as r,
    ):
        assert r.status == 200, await r.text()


class Issuer:
    """A stand-in authorization server on a loopback port: its OpenID Provider metadata, a
    JWKS with an RSA and a P-256 key, whose private halves sign the tokens :meth:`mint`
    makes, and an introspection endpoint answering :attr:`introspection_answer`."""

    def __init__(self) -> None:
        self.port = free_port()
        self.rsa = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})
        self.ec = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
        self.requests: list[str] = []
        # What its introspection endpoint answers, and the Authorization headers it was sent.
        self.introspection_answer: dict[str, Any] = {"active": False}
        self.introspected_by: list[str | None] = []
        self._stop: Callable[[], Awaitable[None]] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        async def metadata(request: web.Request) -> web.Response:
            self.requests.append(request.path)
            return web.json_response({"issuer": self.base, "jwks_uri": f"{self.base}/jwks"})

        async def jwks(request: web.Request) -> web.Response:
            self.requests.append(request.path)
            keys = [k.as_dict(private=False) for k in (self.rsa, self.ec)]
            return web.json_response({"keys": keys})

        async def introspect(request: web.Request) -> web.Response:
            self.introspected_by.append(request.headers.get("Authorization"))
            assert "token" in await request.post()
            return web.json_response(self.introspection_answer)

        app = web.Application()
        app.router.add_post("/introspect", introspect)
        app.router.add_get("/.well-known/openid-configuration", metadata)
        app.router.add_get("/jwks", jwks)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self.port).start()
        self._stop = runner.cleanup

    async def stop(self) -> None:
        if self._stop is not None:
            await self._stop()

    def mint(
        self,
        audience: Any,
        *,
        header: dict[str, Any] | None = None,
        key: Key | None = None,
        **claims: Any,
    ) -> str:
        """An access token as authgate makes them (RS256, ``typ: at+jwt``) for ``audience``,
        claims overridable (None removes one)."""
        key = key or self.rsa
        alg = "RS256" if key.key_type == "RSA" else "ES256"
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.base,
            "sub": "acc-minted",
            "aud": audience,
            "client_id": "some-app",
            "scope": "openid profile",
            "jti": secrets.token_urlsafe(8),
            "iat": now,
            "exp": now + 300,
        }
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        protected = {"alg": alg, "kid": key.kid, "typ": "at+jwt", **(header or {})}
        protected = {k: v for k, v in protected.items() if v is not None}
        return jwt.encode(protected, body, key, algorithms=[protected["alg"]])


def unsigned(token: str, alg: str = "none") -> str:
    """``token``'s claims under a header of ``alg`` with no signature (``alg: none``)."""
    header = {"alg": alg, "typ": "at+jwt", "kid": "rsa-1"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    encoded = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    return f"{encoded}.{token.split('.')[1]}."


def hmac_signed(token: str, secret: bytes) -> str:
    """``token``'s claims signed HS256 with ``secret`` (a public key used as an HMAC secret:
    the classic algorithm confusion), by hand, since joserfc refuses to make one."""
    header = {"alg": "HS256", "typ": "at+jwt", "kid": "rsa-1"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    signing_input = base64.urlsafe_b64encode(raw).rstrip(b"=") + b"." + token.split(".")[1].encode()
    mac = hmac.new(secret, signing_input, hashlib.sha256).digest()
    return (signing_input + b"." + base64.urlsafe_b64encode(mac).rstrip(b"=")).decode()
