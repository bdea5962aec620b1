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
from collections.abc import Awaitable, Callable
from typing import Any

from tests.interop.provider_face import (
    ES256_CLIENT,
    ES256_SECRET,
    JWT_CLIENT,
    JWT_KEY,
    LOGOUT_URI,
    NODE_CLIENT,
    NODE_SECRET,
    PERSON,
    POST_CLIENT,
    POST_NAME,
    POST_SECRET,
    PUBLIC_CLIENT,
    REDIRECT_URI,
    Provider,
)
from tests.interop.support import RP_DIR, Browser, query_of

WITHIN = 60  # seconds for each step of the script on a loaded machine


async def run_script(
    provider: Provider,
    script: str,
    env: dict[str, str],
    answer: Callable[[Browser, dict[str, Any]], Awaitable[str]],
    finish: Callable[[Browser, dict[str, Any]], Awaitable[None]] | None = None,
) -> dict[str, Any]:
    """``node <script>`` with ``env``, each of its authorization requests answered by
    ``answer`` (the line the browser sends back); its report (the last line), which ``finish``
    completes while the browser is still open."""
    process = await asyncio.create_subprocess_exec(
        "node",
        script,
        cwd=RP_DIR,
        env={**os.environ, **env},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    browser = provider.browser()
    try:
        while True:
            line = await asyncio.wait_for(process.stdout.readline(), WITHIN)
            if not line:
                break
            said = json.loads(line)
            if "authorize" in said:
                reply = await answer(browser, said)
                process.stdin.write(reply.encode() + b"\n")
                await process.stdin.drain()
            elif "done" in said:
                report: dict[str, Any] = said["done"]
                if finish is not None:
                    await finish(browser, report)
                return report
        stderr = await process.stderr.read() if process.stderr is not None else b""
        raise AssertionError(f"{script} stopped without a report: {stderr.decode()[-3000:]}")
    finally:
        await browser.close()
        if process.returncode is None:
            process.kill()
        await process.wait()


async def run_rp(provider: Provider) -> dict[str, Any]:
    """``node rp.js``, answering each of its authorization requests as the browser does; its
    report (the last line)."""
    authorizations = 0

    async def answer(browser: Browser, said: dict[str, Any]) -> str:
        nonlocal authorizations
        authorizations += 1
        return await provider.authorize(browser, said["authorize"])

    async def finish(browser: Browser, report: dict[str, Any]) -> None:
        report["authorizations"] = authorizations
        report["session_ended"] = await follow_logout(browser, report)

    env = {
        "ISSUER": provider.issuer,
        "CLIENT_ID": NODE_CLIENT,
        "CLIENT_SECRET": NODE_SECRET,
        "REDIRECT_URI": REDIRECT_URI,
        "LOGOUT_URI": LOGOUT_URI,
    }
    return await run_script(provider, "rp.js", env, answer, finish)


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


async def run_flows(provider: Provider) -> tuple[dict[str, Any], dict[str, tuple[str, ...]]]:
    """``node flows.js``, the browser answering each authorization (a redirect's URL, or the
    form of a form_post page as the browser posts it): its report, and the pages of authgate
    the person met in each authorization, by the script's label."""
    pages: dict[str, tuple[str, ...]] = {}

    async def answer(browser: Browser, said: dict[str, Any]) -> str:
        decision = "deny" if said["label"].endswith("-denied") else "approve"
        back = await provider.through(browser, said["authorize"], decision=decision)
        pages[said["label"]] = back.pages
        if back.form is None:
            return back.url
        return json.dumps({"form_post": {"action": back.url, "fields": back.form}})

    env = {
        "ISSUER": provider.issuer,
        "REDIRECT_URI": REDIRECT_URI,
        "CLIENTS": json.dumps(
            {
                "post": {"client_id": POST_CLIENT, "secret": POST_SECRET},
                "public": {"client_id": PUBLIC_CLIENT},
                "formPost": {"client_id": NODE_CLIENT, "secret": NODE_SECRET},
                "es256": {"client_id": ES256_CLIENT, "secret": ES256_SECRET},
                "privateKeyJwt": {
                    "client_id": JWT_CLIENT,
                    "jwk": JWT_KEY.as_dict(private=True),
                },
            }
        ),
    }
    return await run_script(provider, "flows.js", env, answer), pages


def refusal(outcome: dict[str, Any] | None) -> tuple[Any, Any]:
    assert outcome is not None, "the library was not refused"
    return outcome["error"], outcome["status"]


async def test_openid_client_as_applications_of_every_kind(
    authgate_provider: Provider, oidc_provider_installed: None
) -> None:
    """client_secret_post with the consent page, a public client with refresh, form_post,
    an ES256 client verified through discovery and JWKS, and private_key_jwt."""
    report, pages = await run_flows(authgate_provider)

    # a third party with client_secret_post: the person signed in and approved its consent
    # page; the library finished the flow; consent is not asked again for the same scopes
    post = report["post"]
    assert pages["post"] == ("sign-in", "consent")
    assert POST_NAME in authgate_provider.consent_pages[0]
    assert pages["post-denied"] == ("consent",)  # wider: asked again, and denied
    assert post["denied"] is not None and post["denied"]["error"] == "access_denied", post
    assert pages["post-again"] == ()
    assert post["aud"] == POST_CLIENT and post["sub"]
    assert set(post["scope"].split()) == {"openid", "email", "offline_access"}
    assert post["rotated"] is True and post["userinfoEmail"] == PERSON.email
    assert post["introspected"]["active"] is True
    assert post["introspected"]["client_id"] == POST_CLIENT
    assert refusal(post["replacedRefused"]) == ("invalid_grant", 400)
    assert refusal(post["revokedRefused"]) == ("invalid_grant", 400)

    # the public client: no secret, PKCE alone, single sign-on (no page)
    public = report["public"]
    assert pages["public"] == () and public["aud"] == PUBLIC_CLIENT
    assert public["sub"] == post["sub"]
    assert public["rotated"] is True and public["refreshedSub"] in (None, public["sub"])
    assert public["userinfoName"] == PERSON.name
    assert refusal(public["replacedRefused"]) == ("invalid_grant", 400)
    assert refusal(public["afterReuse"]) == ("invalid_grant", 400)  # the family ended
    assert refusal(public["revokedRefused"]) == ("invalid_grant", 400)

    # form_post: the browser posted authgate's form, the library read it as a Request
    form_post = report["formPost"]
    assert form_post == {
        "formPost": True,
        "sent": "form_post",
        "sub": post["sub"],
        "alg": "RS256",
    }

    # ES256: verified by the key set discovery names; an RP told to expect RS256 refuses it
    es256 = report["es256"]
    assert (es256["alg"], es256["aud"], es256["sub"]) == ("ES256", ES256_CLIENT, post["sub"])
    assert es256["kid"]
    refused_rs256 = es256["expectingRs256"]
    assert refused_rs256 is not None, "the library took an ES256 ID token it was told not to"
    assert "alg" in (refused_rs256["cause"] or ""), refused_rs256

    # private_key_jwt with the library's own client assertion
    jwt_app = report["privateKeyJwt"]
    assert jwt_app["sub"] == post["sub"] and jwt_app["rotated"] is True
    assert jwt_app["introspected"]["active"] is True
    assert jwt_app["introspected"]["client_id"] == JWT_CLIENT
    assert jwt_app["afterRevocation"] == {"active": False}
