"""Interop with a relying party no one here wrote: openid-client, the OpenID Certified RP library
from the npm registry (tests/interop/openid_client/rp.js), against a real ``authgate serve`` as
its OpenID Provider, on SQLite and on PostgreSQL.

The library discovers the provider, reads a ``prompt=none`` error response before the person
has signed in (``login_required``; its state and ``iss`` checked), builds the authorization
request (code + PKCE S256, state, nonce), redeems the code (and validates the ID token and the
RFC 9207 ``iss`` as it always does), reads userinfo, refreshes (rotation: the replaced refresh
token is refused afterwards and its presentation ends the family), introspects, revokes, and
builds the RP-initiated logout URL.
The test plays the browser (authgate's sign-in page, the fake identity provider) and follows the
logout URL; it asserts on what the library reports.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from tests.interop.provider_face import (
    LOGOUT_URI,
    NODE_CLIENT,
    NODE_SECRET,
    PERSON,
    REDIRECT_URI,
    Provider,
)
from tests.interop.support import RP_DIR, Browser, query_of

WITHIN = 60  # seconds for each step of the script on a loaded machine


async def run_rp(provider: Provider) -> dict[str, Any]:
    """``node rp.js``, answering each of its authorization requests as the browser does; its
    report (the last line)."""
    env = {
        **os.environ,
        "ISSUER": provider.issuer,
        "CLIENT_ID": NODE_CLIENT,
        "CLIENT_SECRET": NODE_SECRET,
        "REDIRECT_URI": REDIRECT_URI,
        "LOGOUT_URI": LOGOUT_URI,
    }
    process = await asyncio.create_subprocess_exec(
        "node",
        "rp.js",
        cwd=RP_DIR,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    browser = provider.browser()
    try:
        authorizations = 0
        while True:
            line = await asyncio.wait_for(process.stdout.readline(), WITHIN)
            if not line:
                break
            said = json.loads(line)
            if "authorize" in said:
                authorizations += 1
                back = await provider.authorize(browser, said["authorize"])
                process.stdin.write(back.encode() + b"\n")
                await process.stdin.drain()
            elif "done" in said:
                report: dict[str, Any] = said["done"]
                report["authorizations"] = authorizations
                report["session_ended"] = await follow_logout(browser, report)
                return report
        stderr = await process.stderr.read() if process.stderr is not None else b""
        raise AssertionError(f"rp.js stopped without a report: {stderr.decode()[-3000:]}")
    finally:
        await browser.close()
        if process.returncode is None:
            process.kill()
        await process.wait()


async def follow_logout(browser: Browser, report: dict[str, Any]) -> bool:
    """The browser follows the library's end-session URL: authgate ends the session and sends
    it to the registered post-logout URI with the state; then the session is refused."""
    answer = await browser.authgate("GET", report["endSessionUrl"], headers={"Accept": "text/html"})
    assert answer.status in (302, 303), (answer.status, answer.text[:800])
    assert answer.location is not None and answer.location.startswith(LOGOUT_URI), answer
    assert query_of(answer.location) == {"state": report["logoutState"]}, answer.location
    session = browser.authgate_cookies.get("session")
    headers = {"Authorization": f"Bearer {session}"} if session else {}
    after = await browser.authgate("GET", "/v1/account", headers=headers)
    return bool(after.status == 401)


async def test_openid_client_through_every_endpoint(
    authgate_provider: Provider, oidc_provider_installed: None
) -> None:
    report = await run_rp(authgate_provider)
    issuer = authgate_provider.issuer

    assert report["issuer"] == issuer
    assert report["authorizations"] == 3  # prompt=none, a sign-in, single sign-on
    assert report["promptNone"] is not None
    assert report["promptNone"]["error"] == "login_required", report["promptNone"]
    id_token = report["idToken"]
    assert id_token["aud"] == NODE_CLIENT and id_token["matchesNonce"] is True
    assert id_token["sub"] and id_token["sid"]
    assert report["tokenType"].lower() == "bearer"
    assert set(report["scope"].split()) == {"openid", "email", "profile", "offline_access"}
    assert report["hasRefreshToken"] is True
    userinfo = report["userinfo"]
    assert {k: userinfo.get(k) for k in ("sub", "email", "email_verified", "name")} == {
        "sub": id_token["sub"],
        "email": PERSON.email,
        "email_verified": True,
        "name": PERSON.name,
    }, userinfo

    # rotation, and reuse of the replaced token ending the family
    assert report["rotated"] is True
    assert report["refreshedIdTokenSub"] in (None, id_token["sub"])
    refreshed = report["introspectRefreshed"]
    assert refreshed["active"] is True and refreshed["client_id"] == NODE_CLIENT, refreshed
    assert refreshed["sub"] == id_token["sub"] and refreshed["iss"] == issuer, refreshed
    assert report["replacedRefused"] == {"error": "invalid_grant", "status": 400}
    assert report["introspectAfterReuse"] == {"active": False}
    assert report["rotatedRefusedAfterReuse"] == {"error": "invalid_grant", "status": 400}

    # single sign-on, then revocation: the family's access token is inactive at once
    assert report["ssoSameSub"] is True
    assert report["introspectBeforeRevocation"]["active"] is True
    assert report["introspectAfterRevocation"] == {"active": False}
    assert report["revokedRefused"] == {"error": "invalid_grant", "status": 400}
    assert report["userinfoAfterRevocation"] is not None
    assert report["userinfoAfterRevocation"]["status"] == 401, report["userinfoAfterRevocation"]

    # the end-session URL the library built, followed: the session is over
    assert report["endSessionUrl"].startswith(issuer + "/oauth2/logout?")
    assert report["session_ended"] is True
