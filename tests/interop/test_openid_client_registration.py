"""Interop of dynamic client registration (RFC 7591) with a library nobody here wrote:
openid-client (tests/interop/openid_client/register.js) discovers the registration endpoint of
a real ``authgate serve``, registers a public client with an initial access token made by
``authgate clients token`` on the same database, signs a person in with the client it was given
(code + PKCE) and refreshes; the spent token is refused. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bench.harness import ServiceProcess, free_port, service_config, write_config
from tests.fakeidp import FakeIdP
from tests.interop.conftest import database_url_for
from tests.interop.provider_face import REDIRECT_URI, Provider
from tests.interop.support import Browser
from tests.interop.test_openid_client import run_script


@contextlib.asynccontextmanager
async def registering(tmp_path: Path, database_url: str) -> AsyncIterator[tuple[Provider, str]]:
    """authgate with registration enabled and no configured client, and its config file."""
    port = free_port()
    async with FakeIdP() as fake:
        config = service_config(
            tmp_path,
            fake,
            port=port,
            database_url=database_url,
            overrides={
                "rest": {"public_url": f"http://127.0.0.1:{port}"},
                "registration": {"enabled": True},
            },
        )
        path = write_config(tmp_path, config)
        authgate = ServiceProcess(path)
        await authgate.start()
        try:
            yield Provider(authgate, fake), str(path)
        finally:
            await authgate.stop()
        log = authgate.log()
        assert "Traceback" not in log, log[-3000:]
        assert "code=" not in log and "eyJ" not in log, log[-3000:]


@pytest.fixture(params=["sqlite", "postgres"])
async def registration_provider(
    request: pytest.FixtureRequest, tmp_path: Path, oidc_provider_installed: None
) -> AsyncIterator[tuple[Provider, str]]:
    async with registering(tmp_path, database_url_for(request, tmp_path)) as running:
        yield running


def initial_token(config: str) -> str:
    made = subprocess.run(
        [sys.executable, "-m", "authgate.entrypoints.cli", "clients", "token", "--config", config],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


async def test_openid_client_registers_and_signs_in_as_a_public_client(
    registration_provider: tuple[Provider, str],
) -> None:
    provider, config = registration_provider
    token = await asyncio.to_thread(initial_token, config)

    async def answer(browser: Browser, said: dict[str, Any]) -> str:
        return await provider.authorize(browser, said["authorize"])

    env = {"ISSUER": provider.issuer, "REDIRECT_URI": REDIRECT_URI, "INITIAL_TOKEN": token}
    report = await run_script(provider, "register.js", env, answer)

    assert report["registrationEndpoint"] == provider.issuer + "/oauth2/register"
    client_id = report["clientId"]
    assert report["method"] == "none" and report["hasSecret"] is False
    assert report["hasRegistrationToken"] is True
    assert report["registrationClientUri"] == f"{provider.issuer}/oauth2/register/{client_id}"
    assert report["idToken"] == {"aud": client_id, "matchesNonce": True}
    assert report["hasRefreshToken"] is True and report["refreshed"] is True
    # The registered client is not first party: the person consented to it by its name.
    assert any("openid-client registered app" in page for page in provider.consent_pages)
    second = report["secondRegistration"]
    assert second != "registered" and second["status"] == 401, second
