"""The aiohttp middleware and the FastAPI dependency of authgate.client, each serving a small
application on a loopback port, called with real session tokens of a running authgate as the
bearer token and as the ``session`` cookie."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
import uvicorn
from aiohttp import web
from fastapi import Depends, FastAPI
from joserfc import jwt
from joserfc.jwk import ECKey

from authgate.client import Session, SessionVerifier
from authgate.client.aiohttp import SESSION_KEY, session_middleware, session_of
from authgate.client.fastapi import require_session
from tests.client.support import AUDIENCE, ISSUER, Authgate, claims_of
from tests.support.ports import free_port

FOREIGN = "https://evil.example"


def aiohttp_app(verifier: SessionVerifier) -> web.Application:
    def describe(session: Session | None) -> dict[str, Any]:
        if session is None:
            return {"account": None}
        return {"account": session.account_id, "scopes": sorted(session.scopes)}

    async def me(request: web.Request) -> web.Response:
        return web.json_response(describe(request[SESSION_KEY]))

    async def change(request: web.Request) -> web.Response:
        return web.json_response(describe(session_of(request)))

    api = web.Application(
        middlewares=[session_middleware(verifier, required_scopes={"account:read"})]
    )
    api.router.add_get("/me", me)
    api.router.add_post("/change", change)
    admin = web.Application(middlewares=[session_middleware(verifier, required_scopes={"admin"})])
    admin.router.add_get("/x", me)
    public = web.Application(middlewares=[session_middleware(verifier, optional=True)])
    public.router.add_get("/hello", me)
    public.router.add_post("/change", change)
    app = web.Application()
    app.add_subapp("/api/", api)
    app.add_subapp("/admin/", admin)
    app.add_subapp("/public/", public)
    return app


def fastapi_app(verifier: SessionVerifier) -> FastAPI:
    app = FastAPI()
    current = require_session(verifier, scopes={"account:read"})
    admin = require_session(verifier, scopes={"admin"})
    maybe = require_session(verifier, optional=True)

    def describe(session: Session | None) -> dict[str, Any]:
        if session is None:
            return {"account": None}
        return {"account": session.account_id, "scopes": sorted(session.scopes)}

    @app.get("/api/me")
    async def me(session: Session = Depends(current)) -> dict[str, Any]:  # noqa: B008
        return describe(session)

    @app.post("/api/change")
    async def change(session: Session = Depends(current)) -> dict[str, Any]:  # noqa: B008
        return describe(session)

    @app.get("/admin/x")
    async def admin_only(session: Session = Depends(admin)) -> dict[str, Any]:  # noqa: B008
        return describe(session)

    @app.get("/public/hello")
    async def hello(session: Session | None = Depends(maybe)) -> dict[str, Any]:  # noqa: B008
        return describe(session)

    @app.post("/public/change")
    async def public_change(session: Session | None = Depends(maybe)) -> dict[str, Any]:  # noqa: B008
        return describe(session)

    return app


async def serve_aiohttp(verifier: SessionVerifier, port: int) -> Callable[[], Awaitable[None]]:
    runner = web.AppRunner(aiohttp_app(verifier))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner.cleanup


async def serve_fastapi(verifier: SessionVerifier, port: int) -> Callable[[], Awaitable[None]]:
    config = uvicorn.Config(
        fastapi_app(verifier), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)

    async def stop() -> None:
        server.should_exit = True
        await task

    return stop


class App:
    """An application on a loopback port, and a client that sends cookies by hand (the
    session cookie is Secure; these apps answer on http)."""

    def __init__(self, base: str, http: aiohttp.ClientSession, framework: str) -> None:
        self.base = base
        self.http = http
        self.framework = framework

    async def call(
        self,
        method: str,
        path: str,
        bearer: str | None = None,
        cookie: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any], Any]:
        sent = dict(headers or {})
        if bearer is not None:
            sent["Authorization"] = f"Bearer {bearer}"
        if cookie is not None:
            sent["Cookie"] = f"session={cookie}"
        async with self.http.request(method, self.base + path, headers=sent) as r:
            body = await r.json()
            # FastAPI wraps an HTTPException's detail: the same error object inside.
            if self.framework == "fastapi" and r.status >= 400:
                body = body["detail"]
            return r.status, body, r.headers


@pytest.fixture(params=["aiohttp", "fastapi"])
async def app(request: pytest.FixtureRequest, authgate: Authgate) -> AsyncIterator[App]:
    port = free_port()
    serve = serve_aiohttp if request.param == "aiohttp" else serve_fastapi
    async with (
        SessionVerifier.for_service(authgate.base, issuer=ISSUER, audience=AUDIENCE) as verifier,
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
    ):
        stop = await serve(verifier, port)
        try:
            yield App(f"http://127.0.0.1:{port}", http, request.param)
        finally:
            await stop()


@pytest.fixture(scope="module")
def token(authgate: Authgate) -> str:
    return asyncio.run(authgate.sign_in("ada"))


async def test_bearer_and_cookie_are_accepted(app: App, authgate: Authgate, token: str) -> None:
    expected = {"account": claims_of(token)["sub"], "scopes": ["account:manage", "account:read"]}
    assert (await app.call("GET", "/api/me", bearer=token))[:2] == (200, expected)
    assert (await app.call("GET", "/api/me", cookie=token))[:2] == (200, expected)
    # Both present: the bearer token is used (as authgate does), whatever the cookie holds.
    assert (await app.call("GET", "/api/me", bearer=token, cookie="stale"))[:2] == (200, expected)


async def test_no_session_is_401(app: App) -> None:
    status, body, headers = await app.call("GET", "/api/me")
    assert status == 401
    assert body["error"] == "unauthorized"
    assert headers["WWW-Authenticate"] == "Bearer"
    # Another scheme is not ours: the request simply has no session.
    status, body, headers = await app.call(
        "GET", "/api/me", headers={"Authorization": "Basic eA=="}
    )
    assert (status, body["error"], headers["WWW-Authenticate"]) == (401, "unauthorized", "Bearer")


async def test_invalid_sessions_are_401(app: App, authgate: Authgate, token: str) -> None:
    expired = authgate.mint(exp=int(time.time()) - 3600)
    for kwargs in ({"bearer": "not-a-jwt"}, {"bearer": expired}, {"cookie": expired}):
        status, body, headers = await app.call("GET", "/api/me", **kwargs)
        assert status == 401, kwargs
        assert body == {"error": "unauthorized", "message": "invalid or expired session"}
        assert headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    status, body, headers = await app.call(
        "GET", "/api/me", headers={"Authorization": f"Bearer {token} {token}"}
    )
    assert (status, body["message"]) == (401, "malformed Authorization header")


async def test_a_missing_scope_is_403(app: App, token: str) -> None:
    for kwargs in ({"bearer": token}, {"cookie": token}):
        status, body, headers = await app.call("GET", "/admin/x", **kwargs)
        assert status == 403
        assert body == {
            "error": "insufficient_scope",
            "message": "the session lacks the required scope: admin",
        }
        assert headers["WWW-Authenticate"] == 'Bearer error="insufficient_scope"'


async def test_cookie_changes_must_come_from_the_own_origin(app: App, token: str) -> None:
    own = {"Origin": app.base}
    assert (await app.call("POST", "/api/change", cookie=token, headers=own))[0] == 200
    same = {"Sec-Fetch-Site": "same-origin"}
    assert (await app.call("POST", "/api/change", cookie=token, headers=same))[0] == 200
    for headers in (
        {"Origin": FOREIGN},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "same-origin", "Origin": FOREIGN},
        {},
    ):
        status, body, _ = await app.call("POST", "/api/change", cookie=token, headers=headers)
        assert (status, body["error"]) == (403, "cross_site_request"), headers
    # The bearer token is never sent by a browser on its own: no origin check.
    assert (await app.call("POST", "/api/change", bearer=token, headers={"Origin": FOREIGN}))[
        0
    ] == 200
    # Reading with the cookie from anywhere is fine (a cross-site page cannot read the answer).
    assert (await app.call("GET", "/api/me", cookie=token, headers={"Origin": FOREIGN}))[0] == 200


async def test_optional_sessions(app: App, authgate: Authgate, token: str) -> None:
    expired = authgate.mint(exp=int(time.time()) - 3600)
    assert (await app.call("GET", "/public/hello"))[:2] == (200, {"account": None})
    # A cookie that no longer verifies is an anonymous visit, not an error...
    assert (await app.call("GET", "/public/hello", cookie=expired))[:2] == (
        200,
        {"account": None},
    )
    # ...but a bearer token that does not verify is refused: its sender meant to sign in.
    assert (await app.call("GET", "/public/hello", bearer=expired))[0] == 401
    status, body, _ = await app.call("GET", "/public/hello", cookie=token)
    assert (status, body["account"]) == (200, claims_of(token)["sub"])
    # A valid cookie on a cross-site change is still refused.
    status, body, _ = await app.call(
        "POST", "/public/change", cookie=token, headers={"Origin": FOREIGN}
    )
    assert (status, body["error"]) == (403, "cross_site_request")


async def test_unreachable_keys_are_503_not_401() -> None:
    verifier = SessionVerifier.for_service(
        f"http://127.0.0.1:{free_port()}", issuer=ISSUER, audience=AUDIENCE, timeout_seconds=2
    )
    key = ECKey.generate_key("P-256", parameters={"kid": "k"})
    token = jwt.encode({"alg": "ES256", "kid": "k"}, {"sub": "x"}, key)
    for serve in (serve_aiohttp, serve_fastapi):
        port = free_port()
        async with verifier, aiohttp.ClientSession() as http:
            stop = await serve(verifier, port)
            try:
                framework = "aiohttp" if serve is serve_aiohttp else "fastapi"
                app = App(f"http://127.0.0.1:{port}", http, framework)
                status, body, headers = await app.call("GET", "/api/me", bearer=token)
            finally:
                await stop()
        assert (status, body["error"], headers["Retry-After"]) == (
            503,
            "temporarily_unavailable",
            "5",
        )


def test_the_package_works_without_fastapi() -> None:
    # FastAPI is imported by require_session only: a service without it can use the rest.
    code = (
        "import sys; sys.modules['fastapi'] = None\n"
        "import authgate.client, authgate.client.aiohttp, authgate.client.fastapi\n"
        "authgate.client.SessionVerifier('http://x/.well-known/jwks.json', issuer='i', "
        "audience='a')\n"
        "try:\n"
        "    authgate.client.fastapi.require_session(None)\n"
        "except ImportError:\n"
        "    print('fastapi needed only here')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "fastapi needed only here"
