"""A pending link or re-authentication completes only while the session that started it lives.

The attack: a thief holding a fresh stolen session starts ``intent=link``; the victim signs out
everywhere (or ends that one session); the thief then completes the link with their own
facebook account, which would sign in to the victim's account from then on. Ending the session
must cancel what it started: the callback redirects with ``authentication_failed`` /
``session_ended`` and changes nothing. On memory, SQLite and PostgreSQL (the pending sign-in
remembers its session in each state store).
"""

from __future__ import annotations

import base64
import json

from aiohttp import ClientResponse

from authgate.domain.model import Outcome
from tests.fakeidp import FakeUser

from .conftest import Events, session_of

VICTIM = FakeUser(sub="victim-g", email="victim@example.com", name="Vic Tim")
THIEF = FakeUser(sub="thief-fb", email="thief@example.com", name="The Thief")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def sid_of(token: str) -> str:
    payload = token.split(".")[1]
    return str(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sid"])


async def providers_of(events: Events, token: str) -> list[str]:
    listed = await events.client.get("/v1/account/providers", headers=bearer(token))
    assert listed.status == 200, await listed.text()
    return [p["provider"] for p in (await listed.json())["providers"]]


async def finish(
    events: Events, provider: str, details: dict[str, str], binding: str, user: FakeUser
) -> ClientResponse:
    """The provider's page and the callback of a sign-in started with ``begin``."""
    back = await events.idp.authorize(details["authorizationUrl"], user=user)
    return await events.signin.callback(provider, back.params, binding=binding, method=back.method)


def assert_refused(answer: ClientResponse, reason: str = "session_ended") -> None:
    assert answer.status == 302
    location = answer.headers["Location"]
    assert "error=authentication_failed" in location and f"reason={reason}" in location
    assert "session" not in answer.cookies


async def test_a_link_started_by_a_session_then_signed_out_everywhere_is_refused(
    events: Events,
) -> None:
    stolen = await events.signed_in("google", VICTIM)
    details, binding = await events.signin.begin("facebook", bearer=stolen, intent="link")
    # The victim notices and signs out everywhere (from another, fresh session).
    victim = await events.signed_in("google", VICTIM)
    out = await events.client.post("/v1/auth/logout?everywhere=true", headers=bearer(victim))
    assert out.status == 204

    answer = await finish(events, "facebook", details, binding, THIEF)
    assert_refused(answer)
    # Nothing was linked: the thief's facebook account signs in to nothing.
    again = await events.signed_in("google", VICTIM)
    assert await providers_of(events, again) == ["google"]
    login = await events.signin.complete("facebook", user=THIEF, intent="login")
    assert "error=account_not_found" in login.headers["Location"]
    facebook = [(e.outcome, e.detail) for e in await events.audit() if e.provider == "facebook"]
    assert (Outcome.FAILED, "session_ended") in facebook
    assert Outcome.LINKED not in [outcome for outcome, _ in facebook]


async def test_a_link_whose_session_was_ended_by_the_owner_is_refused(events: Events) -> None:
    stolen = await events.signed_in("google", VICTIM)
    details, binding = await events.signin.begin("facebook", bearer=stolen, intent="link")
    victim = await events.signed_in("google", VICTIM)
    ended = await events.client.delete(
        f"/v1/account/sessions/{sid_of(stolen)}", headers=bearer(victim)
    )
    assert ended.status == 204

    assert_refused(await finish(events, "facebook", details, binding, THIEF))
    assert await providers_of(events, victim) == ["google"]


async def test_a_link_completes_while_its_session_lives(events: Events) -> None:
    token = await events.signed_in("google", VICTIM)
    details, binding = await events.signin.begin("facebook", bearer=token, intent="link")
    linked = await finish(events, "facebook", details, binding, VICTIM)
    fresh = session_of(linked)
    assert await providers_of(events, token) == ["google", "facebook"]
    # The new session keeps the login its starter proved: account changes stay allowed.
    assert (await events.client.get("/v1/account/export", headers=bearer(fresh))).status == 200


async def test_a_link_whose_session_grew_stale_at_the_provider_is_refused(
    events: Events,
) -> None:
    token = await events.signed_in("google", VICTIM)
    events.signin.clock.advance(500)  # still within the 600-second step-up window
    details, binding = await events.signin.begin("facebook", bearer=token, intent="link")
    events.signin.clock.advance(200)  # the pending link lives on; the sign-in is now too old
    answer = await finish(events, "facebook", details, binding, VICTIM)
    assert_refused(answer, "reauthentication_required")
    assert await providers_of(events, token) == ["google"]


async def test_a_re_authentication_started_by_an_ended_session_is_refused(
    events: Events,
) -> None:
    stolen = await events.signed_in("google", VICTIM)
    details, binding = await events.signin.begin("google", bearer=stolen, intent="reauthenticate")
    victim = await events.signed_in("google", VICTIM)
    out = await events.client.post("/v1/auth/logout?everywhere=true", headers=bearer(victim))
    assert out.status == 204

    answer = await finish(events, "google", details, binding, VICTIM)
    assert_refused(answer)
    outcomes = [e.outcome for e in await events.audit()]
    assert Outcome.REAUTHENTICATED not in outcomes


async def test_a_re_authentication_completes_while_its_session_lives(events: Events) -> None:
    token = await events.signed_in("google", VICTIM)
    details, binding = await events.signin.begin("google", bearer=token, intent="reauthenticate")
    fresh = session_of(await finish(events, "google", details, binding, VICTIM))
    assert fresh != token
    assert Outcome.REAUTHENTICATED in [e.outcome for e in await events.audit()]
