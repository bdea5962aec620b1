"""An API protected as a resource server of authgate with authgate.client, on aiohttp and on
FastAPI (and the metadata on a bare Starlette application), each served on a loopback port
and called over HTTP with real access tokens of a running authgate: the RFC 9728 metadata,
and RFC 6750's answers with ``resource_metadata`` in every challenge."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import aiohttp
import pytest
import uvicorn
from aiohttp import web
from fastapi import Depends, FastAPI
from starlette.applications import Starlette

from authgate.client import AccessToken, AccessTokenVerifier, ProtectedResource
from authgate.client.aiohttp import (
    ACCESS_TOKEN_KEY,
    access_token_middleware,
    access_token_of,
    add_protected_resource_routes,
)
from authgate.client.fastapi import protected_resource_routes, require_access_token
from tests.client.resource_support import access_token, authgate_for, issuer_of
from tests.client.support import Authgate, claims_of
from tests.support.ports import free_port

PORT = free_port()
BASE = f"http://127.0.0.1:{PORT}"
RESOURCE = f"{BASE}/api"
METADATA_URL = f"{BASE}/.well-known/oauth-protected-resource/api"
Stop = Callable[[], Awaitable[None]]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Authgate]:
    authgate = authgate_for(tmp_path_factory.mktemp("authgate"), RESOURCE)
    authgate.start()
    try:
        yield authgate
    finally:
        authgate.stop()


@pytest.fixture(scope="module")
def tokens(service: Authgate) -> dict[str, str]:
    async def issue() -> dict[str, str]:
        return {
            "ours": await access_token(service, RESOURCE),
            "another resource's": await access_token(service, "other"),
        }

    return asyncio.run(issue())


def describe(token: AccessToken) -> dict[str, Any]:
    return {"sub": token.subject, "client": token.client_id, "scopes": sorted(token.scopes)}


def aiohttp_app(verifier: AccessTokenVerifier) -> web.Application:
    async def me(request: web.Request) -> web.Response:
        assert request[ACCESS_TOKEN_KEY] is access_token_of(request)
        return web.json_response(describe(access_token_of(request)))

    api = web.Application(
        middlewares=[access_token_middleware(verifier, required_scopes={"profile"})]
    )
    api.router.add_get("/me", me)
    admin = web.Application(
        middlewares=[access_token_middleware(verifier, required_scopes={"email"})]
    )
    admin.router.add_get("/x", me)
    app = web.Application()
    add_protected_resource_routes(app, verifier.resource)
    app.add_subapp("/api/", api)
    app.add_subapp("/admin/", admin)
    return app


def fastapi_app(verifier: AccessTokenVerifier) -> FastAPI:
    app = FastAPI()
    app.router.routes.extend(protected_resource_routes(verifier.resource))
    profile = require_access_token(verifier, scopes={"profile"})
    email = require_access_token(verifier, scopes={"email"})

    @app.get("/api/me")
    async def me(token: AccessToken = Depends(profile)) -> dict[str, Any]:  # noqa: B008
        return describe(token)

    @app.get("/admin/x")
    async def admin(token: AccessToken = Depends(email)) -> dict[str, Any]:  # noqa: B008
        return describe(token)

    return app


async def serve_aiohttp(verifier: AccessTokenVerifier) -> Stop:
    runner = web.AppRunner(aiohttp_app(verifier))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", PORT).start()
    return runner.cleanup


async def serve_asgi(app: Any) -> Stop:
    config = uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning", lifespan="off")
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


async def serve_fastapi(verifier: AccessTokenVerifier) -> Stop:
    return await serve_asgi(fastapi_app(verifier))


SERVERS = {"aiohttp": serve_aiohttp, "fastapi": serve_fastapi}


class Api:
    def __init__(self, http: aiohttp.ClientSession, framework: str) -> None:
        self.http = http
        self.framework = framework

    async def get(
        self, path: str, bearer: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, Any]:
        sent = dict(headers or {})
        if bearer is not None:
            sent["Authorization"] = f"Bearer {bearer}"
        async with self.http.get(BASE + path, headers=sent) as r:
            body = await r.json()
            # FastAPI wraps an HTTPException's detail: the same error object inside.
            if self.framework == "fastapi" and r.status >= 400:
                body = body["detail"]
            return r.status, body, r.headers


async def api_of(framework: str, verifier: AccessTokenVerifier) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as http:
        stop = await SERVERS[framework](verifier)
        try:
            yield Api(http, framework)
        finally:
            await stop()


@pytest.fixture(params=list(SERVERS))
async def api(request: pytest.FixtureRequest, service: Authgate) -> AsyncIterator[Api]:
    resource = ProtectedResource(
        RESOURCE,
        issuer_of(service),
        scopes_supported=["openid", "profile", "email"],
        resource_name="Orders API",
    )
    async with AccessTokenVerifier(resource) as verifier:
        async for api in api_of(request.param, verifier):
            yield api


async def test_the_metadata_names_authgate(api: Api, service: Authgate) -> None:
    expected = {
        "resource": RESOURCE,
        "authorization_servers": [issuer_of(service)],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["openid", "profile", "email"],
        "resource_name": "Orders API",
    }
    # RFC 9728 section 3.1: the identifier's path after the well-known one; and the bare one.
    for path in (
        "/.well-known/oauth-protected-resource/api",
        "/.well-known/oauth-protected-resource",
    ):
        async with api.http.get(BASE + path) as r:
            assert r.status == 200, path
            assert r.content_type == "application/json"
            assert await r.json() == expected
            assert r.headers["Access-Control-Allow-Origin"] == "*"
    # And authgate, the server named there, publishes its metadata with the keys.
    async with api.http.get(f"{issuer_of(service)}/.well-known/openid-configuration") as r:
        assert (await r.json())["issuer"] == expected["authorization_servers"][0]


async def test_a_token_for_this_resource_is_accepted(api: Api, tokens: dict[str, str]) -> None:
    token = tokens["ours"]
    status, body, _ = await api.get("/api/me", bearer=token)
    assert (status, body) == (
        200,
        {"sub": claims_of(token)["sub"], "client": RESOURCE, "scopes": ["openid", "profile"]},
    )


async def test_no_token_is_401_with_the_metadata_url(api: Api) -> None:
    for headers in ({}, {"Authorization": "Basic eA=="}):
        status, body, answer = await api.get("/api/me", headers=headers)
        assert status == 401
        assert body["error"] == "unauthorized"
        assert answer["WWW-Authenticate"] == f'Bearer resource_metadata="{METADATA_URL}"'
        assert answer["Cache-Control"] == "no-store"


async def test_a_token_for_another_resource_is_401(api: Api, tokens: dict[str, str]) -> None:
    status, body, answer = await api.get("/api/me", bearer=tokens["another resource's"])
    description = "the access token is not for this resource"
    assert (status, body) == (401, {"error": "invalid_token", "error_description": description})
    assert answer["WWW-Authenticate"] == (
        f'Bearer error="invalid_token", error_description="{description}", '
        f'resource_metadata="{METADATA_URL}"'
    )


async def test_a_malformed_token_is_401_and_a_malformed_header_400(api: Api) -> None:
    status, body, answer = await api.get("/api/me", bearer="not-a-jwt")
    assert (status, body["error"]) == (401, "invalid_token")
    assert answer["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
    status, body, answer = await api.get("/api/me", headers={"Authorization": "Bearer a b"})
    assert (status, body["error"]) == (400, "invalid_request")
    assert answer["WWW-Authenticate"] == (
        f'Bearer error="invalid_request", resource_metadata="{METADATA_URL}"'
    )


async def test_a_missing_scope_is_403(api: Api, tokens: dict[str, str]) -> None:
    status, body, answer = await api.get("/admin/x", bearer=tokens["ours"])
    assert (status, body["error"]) == (403, "insufficient_scope")
    assert answer["WWW-Authenticate"] == (
        'Bearer error="insufficient_scope", '
        'error_description="the access token lacks a required scope (email)", '
        f'scope="email", resource_metadata="{METADATA_URL}"'
    )


@pytest.mark.parametrize("framework", list(SERVERS))
async def test_authgate_unreachable_is_503(framework: str, tokens: dict[str, str]) -> None:
    resource = ProtectedResource(RESOURCE, f"http://127.0.0.1:{free_port()}")
    async with AccessTokenVerifier(resource, timeout_seconds=2) as verifier:
        async for api in api_of(framework, verifier):
            status, body, answer = await api.get("/api/me", bearer=tokens["ours"])
    assert (status, body["error"], answer["Retry-After"]) == (503, "temporarily_unavailable", "5")
    assert "WWW-Authenticate" not in answer


async def test_the_metadata_on_a_bare_starlette_app(service: Authgate) -> None:
    resource = ProtectedResource(BASE, issuer_of(service))  # an identifier without a path
    stop = await serve_asgi(Starlette(routes=protected_resource_routes(resource)))
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(BASE + "/.well-known/oauth-protected-resource") as r:
                assert r.status == 200
                assert await r.json() == {
                    "resource": BASE,
                    "authorization_servers": [issuer_of(service)],
                    "bearer_methods_supported": ["header"],
                }
            async with http.get(BASE + "/.well-known/oauth-protected-resource/api") as r:
                assert r.status == 404
    finally:
        await stop()
    assert resource.metadata_url == BASE + "/.well-known/oauth-protected-resource"
