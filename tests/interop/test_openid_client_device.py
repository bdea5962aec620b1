"""Interop of the device authorization grant (RFC 8628) with a client library nobody here
wrote: openid-client's ``initiateDeviceAuthorization`` and ``pollDeviceAuthorizationGrant``
(tests/interop/openid_client/device.js) against a real ``authgate serve``, on SQLite and on
PostgreSQL. Authlib's RFC 8628 module is for authorization servers and its clients have no
device-flow helper, so openid-client is the library here.

The library asks, then polls (waiting the interval, through ``authorization_pending``: the
person takes longer than its first polls) while the test's browser opens authgate's
verification page at the address the library got, signs the person up through the fake
identity provider and approves with the page's form; the library validates the ID token it
then gets. A second request is denied: the library reports
``access_denied``."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any
from urllib.parse import urlencode, urljoin

from tests.interop.provider_face import DEVICE_CLIENT, DEVICE_NAME, PERSON, Provider
from tests.interop.support import RP_DIR, Browser
from tests.openid.harness import parse_page

WITHIN = 60  # seconds for each step of the script on a loaded machine


async def person_answers(provider: Provider, url: str, decision: str) -> str:
    """The person's browser opens the verification page at ``url``, signs up with Google on
    the sign-in page it shows, and presses ``decision`` on the request: the last page's
    text."""
    browser = Browser(provider.issuer)
    try:
        page = await browser.authgate("GET", url, headers={"Accept": "text/html"})
        assert page.status == 200, page.text[:800]
        links = dict(parse_page(page.text).links)
        start = await browser.authgate(
            "GET", links["Create an account with Google"], headers={"Accept": "text/html"}
        )
        assert start.status == 302 and start.location is not None, start
        back = await provider.fake.authorize(start.location, user=PERSON)
        callback = await browser.authgate(
            "GET", "/v1/auth/google/callback?" + urlencode(back.params)
        )
        assert callback.status == 302 and callback.location is not None, callback
        page = await browser.authgate(
            "GET", urljoin(provider.issuer, callback.location), headers={"Accept": "text/html"}
        )
        assert page.status == 200 and f"Connect {DEVICE_NAME}?" in page.text, page.text[:800]
        form = parse_page(page.text).forms[0]
        done = await browser.authgate(
            "POST",
            urljoin(page.url, form["action"]),
            data=[*form["fields"], ("decision", decision)],
            headers={
                "Accept": "text/html",
                "Origin": provider.issuer,
                "Sec-Fetch-Site": "same-origin",
            },
        )
        assert done.status == 200, done.text[:800]
        return done.text
    finally:
        await browser.close()


async def run_device(provider: Provider) -> tuple[dict[str, Any], list[str]]:
    """``node device.js``, each of its requests answered by the person's browser; its report
    and the pages the person ended on."""
    process = await asyncio.create_subprocess_exec(
        "node",
        "device.js",
        cwd=RP_DIR,
        env={**os.environ, "ISSUER": provider.issuer, "CLIENT_ID": DEVICE_CLIENT},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    pages: list[str] = []
    try:
        while True:
            line = await asyncio.wait_for(process.stdout.readline(), WITHIN)
            if not line:
                break
            said = json.loads(line)
            if "device" in said:
                asked = said["device"]
                # The person takes a while: the library's first polls (every second here) are
                # answered authorization_pending, which it must read and keep polling through.
                await asyncio.sleep(2.5)
                pages.append(await person_answers(provider, asked["complete"], asked["decision"]))
            elif "done" in said:
                report: dict[str, Any] = said["done"]
                return report, pages
        stderr = await process.stderr.read() if process.stderr is not None else b""
        raise AssertionError(f"device.js stopped without a report: {stderr.decode()[-3000:]}")
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def test_openid_client_device_authorization_grant(
    authgate_provider: Provider, oidc_provider_installed: None
) -> None:
    report, pages = await run_device(authgate_provider)
    issuer = authgate_provider.issuer

    assert report["endpoint"] == f"{issuer}/oauth2/device_authorization"
    asked = report["request"]
    assert asked["verificationUri"] == f"{issuer}/oauth2/device"
    assert (asked["expiresIn"], asked["interval"]) == (600, 1)
    assert len(asked["userCode"]) == 9 and asked["userCode"][4] == "-"

    approved = report["approved"]
    assert approved["aud"] == DEVICE_CLIENT and approved["sub"] and approved["sid"]
    assert approved["scope"] == "openid profile offline_access"
    assert approved["tokenType"].lower() == "bearer"
    assert approved["hasRefreshToken"] is True
    assert report["userinfo"]["sub"] == approved["sub"]
    assert report["userinfo"]["name"] == PERSON.name
    assert report["refreshedSub"] == approved["sub"]
    assert "Device connected" in pages[0]

    assert "Request denied" in pages[1]
    assert report["denied"] is not None and report["denied"]["error"] == "access_denied"
