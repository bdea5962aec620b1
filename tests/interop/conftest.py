"""oidc-provider from the npm registry on loopback, and a real ``authgate serve`` configured with
it by discovery (issue 12, interop).

oidc-provider is installed by ``scripts/interop-deps`` (``scripts/test`` runs it; so does the
first fixture here when node_modules is missing). Without Node.js and npm the tests skip, and
fail under CI, as the browser tests do without Chromium.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest

from bench.harness import ServiceProcess, free_port, service_config, write_config
from tests.interop.support import Browser, OidcProvider, install, missing_tools

PROVIDER = "oidcdemo"  # authgate's name for it: lower-case letters and digits
CLIENT_ID = "authgate-interop"
CLIENT_SECRET = "interop-client-secret"  # exists only in the test run's provider


@pytest.fixture(scope="session")
def oidc_provider_installed() -> None:
    why_not = missing_tools()
    if why_not is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{why_not}; the machine must have Node.js 20+ and npm")
        pytest.skip(why_not)
    install()


@attrs.frozen
class Interop:
    authgate: ServiceProcess
    provider: OidcProvider
    database_url: str

    @property
    def callback_url(self) -> str:
        return f"{self.authgate.url}/v1/auth/{PROVIDER}/callback"

    def browser(self) -> Browser:
        return Browser(self.authgate.url)


@pytest.fixture(params=["sqlite", "postgres"])
async def interop(
    request: pytest.FixtureRequest, tmp_path: Path, oidc_provider_installed: None
) -> AsyncIterator[Interop]:
    """oidc-provider and authgate, each knowing the other's loopback address."""
    if request.param == "postgres":
        database_url = request.getfixturevalue("postgres_url")
    else:
        database_url = f"sqlite:///{tmp_path / 'authgate.db'}"
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
    async with (
        provider,
        ServiceProcess(write_config(tmp_path, config)) as authgate,
    ):
        yield Interop(authgate, provider, database_url)
    log = authgate.log()
    assert "Traceback" not in log, log[-3000:]
    assert "code=" not in log and "logout_token" not in log and "id_token=" not in log, log
