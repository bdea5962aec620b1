"""oidc-provider from the npm registry on loopback, and a real ``authgate serve`` configured with
it by discovery; and authgate as the OpenID Provider of applications that outside client
libraries play (tests/interop/provider_face.py).

oidc-provider is installed by ``scripts/interop-deps`` (``scripts/test`` runs it; so does the
first fixture here when node_modules is missing). Without Node.js and npm the tests skip, and
fail under CI, as the browser tests do without Chromium.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bench.harness import ServiceProcess, free_port, service_config, write_config
from tests.interop.provider_face import Provider, provider
from tests.interop.support import (
    CLIENT_ID,
    CLIENT_SECRET,
    PROVIDER,
    Interop,
    OidcProvider,
    install,
    missing_tools,
)


@pytest.fixture(scope="session")
def oidc_provider_installed() -> None:
    why_not = missing_tools()
    if why_not is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{why_not}; the machine must have Node.js 20+ and npm")
        pytest.skip(why_not)
    install()


def database_url_for(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        url: str = request.getfixturevalue("clean_postgres_url")
        return url
    return f"sqlite:///{tmp_path / 'authgate.db'}"


@contextlib.asynccontextmanager
async def running(
    tmp_path: Path, database_url: str, provider_settings: Mapping[str, Any]
) -> AsyncIterator[Interop]:
    """oidc-provider and authgate, each knowing the other's loopback address; authgate's
    provider ``oidcdemo`` has ``provider_settings`` besides its issuer and client."""
    authgate_port, provider_port = free_port(), free_port()
    authgate_url = f"http://127.0.0.1:{authgate_port}"
    callback = f"{authgate_url}/v1/auth/{PROVIDER}/callback"
    config = service_config(
        tmp_path,
        None,
        port=authgate_port,
        database_url=database_url,
        overrides={
            "app": {"callback_urls": [callback]},
            "providers": {
                PROVIDER: {
                    "issuer": f"http://127.0.0.1:{provider_port}",
                    "client_id": CLIENT_ID,
                    "client_secret": CLIENT_SECRET,
                    "scopes": ["openid", "profile", "email"],
                    "token_endpoint_auth": "client_secret_post",
                    "id_token_algorithms": ["RS256"],
                    **provider_settings,
                }
            },
        },
    )
    provider = OidcProvider(
        port=provider_port,
        authgate_url=authgate_url,
        provider_name=PROVIDER,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        log_path=tmp_path / "oidc-provider.log",
    )
    authgate = ServiceProcess(write_config(tmp_path, config))
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_exit(provider)
        stack.push_async_callback(authgate.stop)
        # side by side (each takes seconds on a loaded machine); authgate reaches the
        # provider only at the first sign-in
        started = await asyncio.gather(provider.start(), authgate.start(), return_exceptions=True)
        for outcome in started:
            if isinstance(outcome, BaseException):
                raise outcome
        yield Interop(authgate, provider, database_url)
    log = authgate.log()
    assert "Traceback" not in log, log[-3000:]
    # no code, ID token or logout token (the provider's are JWTs: "eyJ") in authgate's log
    assert "code=" not in log and "id_token=" not in log and "eyJ" not in log, log


@pytest.fixture(params=["sqlite", "postgres"])
async def interop(
    request: pytest.FixtureRequest, tmp_path: Path, oidc_provider_installed: None
) -> AsyncIterator[Interop]:
    """The two servers; authgate's oidcdemo provider as plain sign-in configures it."""
    async with running(tmp_path, database_url_for(request, tmp_path), {}) as both:
        yield both


@pytest.fixture(params=["sqlite", "postgres"])
async def interop_backchannel(
    request: pytest.FixtureRequest, tmp_path: Path, oidc_provider_installed: None
) -> AsyncIterator[Interop]:
    """The two servers, authgate's back-channel logout receiver on for oidcdemo."""
    settings = {"backchannel_logout": True}
    async with running(tmp_path, database_url_for(request, tmp_path), settings) as both:
        yield both


@pytest.fixture(params=["sqlite", "postgres"])
async def authgate_provider(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Provider]:
    """authgate as the OpenID Provider of the applications the client libraries play, with
    the fake identity provider for the person's sign-in, on SQLite and on PostgreSQL."""
    async with provider(tmp_path, database_url_for(request, tmp_path)) as running_provider:
        yield running_provider
