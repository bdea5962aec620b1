"""OpenID Connect Back-Channel Logout 1.0 with a provider no one here wrote:
oidc-provider's real logout tokens against authgate's receiver
(``POST /v1/providers/oidcdemo/backchannel-logout``, on by ``providers.oidcdemo.
backchannel_logout: true``), on SQLite and on PostgreSQL.

* The user signs out at the provider (RP-initiated logout: its end-session page, "Yes, sign me
  out"). The provider POSTs a ``logout_token`` (with the ``sid`` of the provider's session) to
  authgate before it answers the browser, and authgate answers 200 (the provider counts
  anything but 200/204 as a failed delivery). Within a second authgate refuses that session,
  by cookie and as a bearer token; another user's session at the same provider is untouched.
* The same real token delivered again (a replay, with its one-time ``jti``) is answered 200
  and changes nothing: the user, signed in again meanwhile (a new provider session, a new
  ``sid``), keeps the new session.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

from tests.interop.flows import SignedIn, account, provider_session_of, sign_in
from tests.interop.support import CLIENT_ID, PROVIDER, Interop

LOGOUT_BOUND = 1.0  # seconds from the provider's logout to authgate refusing the session
BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout"


def claims_of(token: str) -> dict[str, Any]:
    """A JWT's claims, unverified (to see what the provider sent; authgate verifies)."""
    payload = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return decoded


async def refused_within(user: SignedIn, seconds: float, since: float) -> bool:
    """Whether ``GET /v1/account`` with the user's cookie answers 401 by ``since + seconds``."""
    while True:
        status, _ = await account(user)
        if status == 401:
            return True
        if time.monotonic() - since > seconds:
            return False
        await asyncio.sleep(0.05)


async def end_session_endpoint(interop: Interop, user: SignedIn) -> str:
    discovery = await user.browser.provider(
        "GET", f"{interop.provider.issuer}/.well-known/openid-configuration"
    )
    endpoint: str = json.loads(discovery.text)["end_session_endpoint"]
    return endpoint


async def test_signing_out_at_the_provider_ends_the_authgate_session(
    interop_backchannel: Interop,
) -> None:
    interop = interop_backchannel
    alice = await sign_in(interop, "alice")
    bob = await sign_in(interop, "bob")
    try:
        assert (await account(alice))[0] == 200
        assert (await account(bob))[0] == 200
        sids = {e["account"]: e["sid"] for e in interop.provider.named("grant.success")}

        signed_out = await alice.browser.sign_out_at_provider(
            await end_session_endpoint(interop, alice), CLIENT_ID
        )
        started = time.monotonic()
        assert signed_out.status in (302, 303), signed_out

        # what the provider sent: a logout token for alice's provider session, to our receiver
        sent = await interop.provider.wait_for("backchannel.sent", within=5)
        assert sent["url"] == f"{interop.authgate.url}/v1/providers/{PROVIDER}/backchannel-logout"
        claims = claims_of(sent["logout_token"])
        assert claims["sid"] == sids["alice"] and claims["aud"] == CLIENT_ID, claims
        assert BACKCHANNEL_EVENT in claims["events"] and "nonce" not in claims, claims

        # ... and authgate took it: answered 200 (or 204), as the provider requires
        delivered = await interop.provider.wait_for(
            "backchannel.success", "backchannel.error", within=5
        )
        assert delivered["event"] == "backchannel.success", delivered
        assert delivered["account"] == "alice" and delivered["sid"] == sids["alice"], delivered

        assert await refused_within(alice, LOGOUT_BOUND, started), (
            "alice's session was still accepted a second after the provider's logout"
        )
        bearer = await alice.browser.authgate(
            "GET", "/v1/account/providers", headers={"Authorization": f"Bearer {alice.session}"}
        )
        assert bearer.status == 401, bearer

        # bob, signed in at the same provider in another browser, is untouched
        assert (await account(bob))[0] == 200
    finally:
        await alice.browser.close()
        await bob.browser.close()


async def test_a_replayed_logout_token_changes_nothing(interop_backchannel: Interop) -> None:
    interop = interop_backchannel
    first = await sign_in(interop, "carol")
    try:
        await first.browser.sign_out_at_provider(
            await end_session_endpoint(interop, first), CLIENT_ID
        )
        token = (await interop.provider.wait_for("backchannel.sent", within=5))["logout_token"]
        delivered = await interop.provider.wait_for(
            "backchannel.success", "backchannel.error", within=5
        )
        assert delivered["event"] == "backchannel.success", delivered
        assert await refused_within(first, LOGOUT_BOUND, time.monotonic())
    finally:
        await first.browser.close()

    # carol signs in again: a new provider session (another sid), a new authgate session
    second = await sign_in(interop, "carol", intent="login")
    try:
        assert second.location == "https://app.example.com/dashboard"
        sessions = await second.browser.authgate("GET", "/v1/account/sessions")
        assert sessions.status == 200, sessions
        (live,) = json.loads(sessions.text)["sessions"]
        new_sid = await provider_session_of(interop, live["id"])
        assert new_sid is not None and new_sid != claims_of(token)["sid"]

        # the provider's real token, delivered a second time
        async with second.browser.plain.post(
            f"{interop.authgate.url}/v1/providers/{PROVIDER}/backchannel-logout",
            data={"logout_token": token},
        ) as replay:
            body = await replay.text()
            assert replay.status == 200, (replay.status, body)  # idempotent: taken, done once

        # the session of the new sign-in is not ended by the old token
        await asyncio.sleep(0.3)
        status, body = await account(second)
        assert status == 200, body
    finally:
        await second.browser.close()
