"""Interop with an OpenID provider no one here wrote: oidc-provider, the certified
implementation from the npm registry, on loopback, and a real ``authgate serve`` that knows it
only by its issuer (discovery), on SQLite and on PostgreSQL.

* a complete sign-in as a person makes it: ``GET /v1/auth/oidcdemo`` in a browser → the
  provider's own login and consent pages → authgate's callback (code, state and the RFC 9207
  ``iss``; PKCE, which this provider requires; the secret in the token request's body) → the
  session cookie, and the account lists the provider, with the email from the provider's
  claims; the session's record keeps the provider's ``sid`` from the ID token; a second
  sign-in in the same browser passes the provider's pages without a question;
* "[ Cancel ]" at the provider: its error answer (with ``iss``) is a denial at authgate;
* a step-up (``intent=reauthenticate``, RFC 9470): the provider is asked to authenticate
  again (``prompt=login``, ``max_age=0``) and does so although its session is live; another
  user at the provider's login page is refused.

The back-channel logout against the same provider: test_backchannel_logout.py.
"""

from __future__ import annotations

import json

from tests.interop.flows import SignedIn, account, provider_session_of, sign_in, sign_in_again
from tests.interop.support import BINDING_COOKIE, PROVIDER, Answer, Interop, query_of


async def test_a_complete_sign_in_through_oidc_provider(interop: Interop) -> None:
    user = await sign_in(interop, "alice")
    try:
        assert user.location == "https://app.example.com/onboarding"

        # the account, as the provider described the user (email from its claims)
        status, body = await account(user)
        assert status == 200, body
        details = json.loads(body)
        assert details["email"] == "alice@interop.example" and details["emailVerified"] is True
        assert details["name"] == "Interop alice"

        providers = await user.browser.authgate(
            "GET", "/v1/account/providers", headers={"Authorization": f"Bearer {user.session}"}
        )
        assert providers.status == 200, providers
        linked = json.loads(providers.text)["providers"]
        assert [(p["provider"], p["providerId"], p["isPrimary"]) for p in linked] == [
            (PROVIDER, f"user:{PROVIDER}:alice", True)
        ], linked

        # the session's record keeps the provider's sid, the one its ID token carried
        granted = await interop.provider.wait_for("grant.success")
        assert granted["account"] == "alice" and granted["sid"], granted
        sessions = await user.browser.authgate("GET", "/v1/account/sessions")
        assert sessions.status == 200, sessions
        listed = json.loads(sessions.text)["sessions"]
        assert [s["provider"] for s in listed] == [PROVIDER], listed
        assert await provider_session_of(interop, listed[0]["id"]) == granted["sid"]

        # signing in again (the provider remembers the user: no login page) finds the account
        again = await sign_in_again(interop, user)
        assert again.location == "https://app.example.com/dashboard"
    finally:
        await user.browser.close()


async def test_cancelling_at_the_provider_is_a_denial(interop: Interop) -> None:
    browser = interop.browser()
    try:
        start = await browser.authgate(
            "GET",
            f"/v1/auth/{PROVIDER}",
            params={"redirect_uri": interop.callback_url, "intent": "register"},
            headers={"Accept": "text/html"},
        )
        assert start.status == 302 and start.location is not None, start
        back = await browser.through_provider(
            start.location, stop_at=interop.callback_url, login="", cancel=True
        )
        assert browser.prompts == ["login"]
        assert back.location is not None
        returned = query_of(back.location)
        assert returned["error"] == "access_denied" and returned["iss"] == interop.provider.issuer
        callback = await browser.authgate("GET", f"/v1/auth/{PROVIDER}/callback", params=returned)
        assert callback.status == 302, callback
        assert callback.location is not None
        assert callback.location.startswith("https://app.example.com/login?")
        assert query_of(callback.location) == {"error": "access_denied", "reason": "user_denied"}
        assert "session" not in browser.authgate_cookies
    finally:
        await browser.close()


async def reauthenticate(interop: Interop, user: SignedIn, login: str) -> Answer:
    """``intent=reauthenticate`` from the signed-in browser, ``login`` at the provider; the
    callback's answer."""
    browser = user.browser
    assert BINDING_COOKIE in browser.authgate_cookies
    start = await browser.authgate(
        "GET",
        f"/v1/auth/{PROVIDER}",
        params={"redirect_uri": interop.callback_url, "intent": "reauthenticate"},
        # a link on this site's own page, as the browser reports it (the cookie's guard)
        headers={"Accept": "text/html", "Sec-Fetch-Site": "same-origin"},
    )
    assert start.status == 302 and start.location is not None, start
    sent = query_of(start.location)
    assert sent["prompt"] == "login" and sent["max_age"] == "0", sent
    back = await browser.through_provider(start.location, stop_at=interop.callback_url, login=login)
    # the provider asked again, although its session (from the first sign-in) is live
    assert browser.prompts[:1] == ["login"], browser.prompts
    assert back.location is not None
    return await browser.authgate(
        "GET", f"/v1/auth/{PROVIDER}/callback", params=query_of(back.location)
    )


async def test_a_step_up_makes_the_provider_authenticate_again(interop: Interop) -> None:
    user = await sign_in(interop, "dora")
    try:
        first = user.session
        again = await reauthenticate(interop, user, "dora")
        assert again.status == 302 and again.location is not None, again
        assert "error=" not in again.location, again.location
        assert user.browser.authgate_cookies["session"] != first
        assert (await account(user))[0] == 200

        # someone else at the provider's login page does not confirm dora
        other = await reauthenticate(interop, user, "mallory")
        assert other.status == 302 and other.location is not None, other
        assert query_of(other.location) == {
            "error": "authentication_failed",
            "reason": "reauthentication_identity_mismatch",
        }
    finally:
        await user.browser.close()
