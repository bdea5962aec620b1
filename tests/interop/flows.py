"""A person's steps through authgate and oidc-provider, shared by the interop tests."""

from __future__ import annotations

import sqlite3

import asyncpg
import attrs

from tests.interop.support import BINDING_COOKIE, PROVIDER, Browser, Interop, query_of


@attrs.frozen
class SignedIn:
    browser: Browser
    session: str  # the session cookie's value (the session JWT)
    location: str  # where the callback sent the browser


async def sign_in(interop: Interop, login: str, *, intent: str = "register") -> SignedIn:
    """``login`` signs in through the provider's pages, as a browser does."""
    browser = interop.browser()
    start = await browser.authgate(
        "GET",
        f"/v1/auth/{PROVIDER}",
        params={"redirect_uri": interop.callback_url, "intent": intent},
        headers={"Accept": "text/html"},
    )
    assert start.status == 302, start
    assert start.location is not None and start.location.startswith(interop.provider.issuer)
    assert BINDING_COOKIE in browser.authgate_cookies
    sent = query_of(start.location)
    assert sent["code_challenge_method"] == "S256" and sent["nonce"], sent

    back = await browser.through_provider(start.location, stop_at=interop.callback_url, login=login)
    assert back.location is not None
    returned = query_of(back.location)
    assert set(returned) >= {"code", "state", "iss"}, returned.keys()
    assert returned["iss"] == interop.provider.issuer

    callback = await browser.authgate(
        "GET", f"/v1/auth/{PROVIDER}/callback", params=returned, headers={"User-Agent": "interop"}
    )
    assert callback.status == 302, callback
    assert callback.location is not None
    assert "error=" not in callback.location, (callback.location, interop.authgate.log()[-2000:])
    session = browser.authgate_cookies.get("session")
    assert session, callback
    return SignedIn(browser, session, callback.location)


async def account(signed_in: SignedIn) -> tuple[int, str]:
    """``GET /v1/account`` with the session cookie, as the application's page calls it."""
    answer = await signed_in.browser.authgate("GET", "/v1/account")
    return answer.status, answer.text


async def provider_session_of(interop: Interop, session_id: str) -> str | None:
    """The provider's ``sid`` recorded with an authgate session (read from its database)."""
    query = "SELECT provider_session FROM sessions WHERE id = "
    if interop.database_url.startswith("sqlite:///"):
        path = interop.database_url.removeprefix("sqlite:///")
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            row = db.execute(query + "?", (session_id,)).fetchone()
        return None if row is None else row[0]
    conn = await asyncpg.connect(interop.database_url)
    try:
        value: str | None = await conn.fetchval(query + "$1", session_id)
        return value
    finally:
        await conn.close()


async def sign_in_again(interop: Interop, user: SignedIn) -> SignedIn:
    """The same browser signs in again with ``intent=login``; the provider's session cookie
    is still there, so it asks for nothing (the consent was given)."""
    browser = user.browser
    start = await browser.authgate(
        "GET",
        f"/v1/auth/{PROVIDER}",
        params={"redirect_uri": interop.callback_url, "intent": "login"},
        headers={"Accept": "text/html"},
    )
    assert start.status == 302 and start.location is not None, start
    back = await browser.through_provider(
        start.location, stop_at=interop.callback_url, login="nobody-asked"
    )
    assert browser.prompts == [], browser.prompts  # no page: the provider knew the user
    assert back.location is not None
    callback = await browser.authgate(
        "GET", f"/v1/auth/{PROVIDER}/callback", params=query_of(back.location)
    )
    assert callback.status == 302 and callback.location is not None, callback
    return SignedIn(browser, browser.authgate_cookies["session"], callback.location)
