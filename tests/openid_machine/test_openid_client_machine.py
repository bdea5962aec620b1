"""Interop with a client library no one here wrote: node openid-client's
``clientCredentialsGrant`` (tests/interop/openid_client/machine.js) against the service's token
endpoint on its real socket, as ``client_secret_basic``, ``client_secret_post`` and
``private_key_jwt`` machine clients, with RFC 8707 resources (one, repeated, unregistered).

openid-client comes from ``scripts/interop-deps`` (installed here when missing); without
Node.js the test skips, and fails under CI, as the other interop tests do."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

from tests.interop.support import RP_DIR, install, missing_tools
from tests.openid.harness import ISSUER, Op

from .conftest import MCP, OTHER_API, POSTER_SECRET, ROBOT_SECRET, SIGNER_KEY, SSF

WITHIN = 60  # seconds for the script on a loaded machine


@pytest.fixture(scope="module")
def openid_client_installed() -> None:
    why_not = missing_tools()
    if why_not is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{why_not}; the machine must have Node.js 20+ and npm")
        pytest.skip(why_not)
    if not (RP_DIR / "node_modules" / "openid-client").is_dir():
        install()


async def machine_report(op: Op) -> dict[str, Any]:
    env = {
        "ISSUER": ISSUER,
        "TOKEN_ENDPOINT": str(op.client.make_url("/oauth2/token")),
        "RESOURCES": json.dumps([MCP, SSF, OTHER_API]),
        "CLIENTS": json.dumps(
            {
                "basic": {"client_id": "robot", "secret": ROBOT_SECRET},
                "post": {"client_id": "poster", "secret": POSTER_SECRET},
                "jwt": {"client_id": "signer", "jwk": SIGNER_KEY.as_dict(private=True)},
            }
        ),
    }
    process = await asyncio.create_subprocess_exec(
        "node",
        "machine.js",
        cwd=RP_DIR,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), WITHIN)
    assert process.returncode == 0, stderr.decode()
    report: dict[str, Any] = json.loads(stdout.decode().strip().splitlines()[-1])["done"]
    return report


@pytest.mark.slow  # it runs a Node.js process, as the interop folder's tests do
@pytest.mark.usefixtures("openid_client_installed")
async def test_openid_client_gets_client_credentials_tokens(machine: Op) -> None:
    report = await machine_report(machine)

    basic = report["basic"]
    assert basic["token_type"] == "bearer"  # openid-client reports the type lower-cased
    assert basic["scope"] == "mcp:tools" and basic["expires_in"] == 300
    assert basic["refresh_token"] is None and basic["id_token"] is None
    claims = basic["claims"]
    assert claims["iss"] == ISSUER
    assert claims["sub"] == claims["client_id"] == "robot" and claims["aud"] == MCP
    assert "sid" not in claims

    assert report["basicBoth"]["claims"]["aud"] == [MCP, SSF]
    assert report["basicBoth"]["scope"] == "mcp:tools ssf.manage"
    assert report["basicUnregistered"] == {"error": "invalid_target", "status": 400}
    assert report["basicPersonScope"] == {"error": "invalid_scope", "status": 400}

    post = report["post"]["claims"]
    assert post["sub"] == post["aud"] == "poster" and report["post"]["scope"] == ""

    jwt = report["jwt"]["claims"]
    assert jwt["sub"] == "signer" and jwt["aud"] == MCP
