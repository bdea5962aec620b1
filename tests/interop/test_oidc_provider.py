"""Interop with an OpenID provider no one here wrote (issue 12): oidc-provider, the certified
implementation from the npm registry, on loopback, and a real ``authgate serve`` that knows it
only by its issuer (discovery), on SQLite and on PostgreSQL.

* a complete sign-in as a person makes it: ``GET /v1/auth/oidcdemo`` in a browser → the
  provider's own login and consent pages → authgate's callback (code, state and the RFC 9207
  ``iss``; PKCE, which this provider requires; the secret in the token request's body) → the
  session cookie, and the account lists the provider, with the email from the provider's
  claims; the session's record keeps the provider's ``sid`` from the ID token; a second
  sign-in in the same browser passes the provider's pages without a question.

The back-channel logout against the same provider: test_backchannel_logout.py.
"""

from __future__ import annotations

import json

from tests.interop.flows import account, provider_session_of, sign_in, sign_in_again
from tests.interop.support import PROVIDER, Interop


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
