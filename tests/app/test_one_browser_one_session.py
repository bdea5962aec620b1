"""One browser, one session: a link or a re-authentication goes on in the session that
started it (its ``auth_time`` moved to the newer proof), never leaving the previous session
alive beside a new one. On memory, SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from tests.fakeidp import FakeUser
from tests.support.jwt import claims_of

from .conftest import CALLBACK_URL, Events
from .test_apple_notifications import link_apple

ADA = FakeUser(sub="ada-g", email="ada@example.com", name="Ada")
ADA_APPLE = FakeUser(sub="ada-a", email="ada@example.com", name="Ada")


async def sessions(events: Events, token: str) -> list[dict[str, Any]]:
    answer = await events.client.get(
        "/v1/account/sessions", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status == 200, await answer.text()
    listed: list[dict[str, Any]] = (await answer.json())["sessions"]
    return listed


async def reauthenticate(events: Events, token: str) -> str:
    answer = await events.client.get(
        "/v1/auth/google",
        params={"redirect_uri": CALLBACK_URL.format(name="google"), "intent": "reauthenticate"},
        headers={"Accept": "application/json", "Authorization": f"Bearer {token}"},
    )
    assert answer.status == 200, await answer.text()
    binding = answer.cookies["__Host-authgate_binding"].value
    back = await events.idp.authorize((await answer.json())["authorizationUrl"], user=ADA)
    done = await events.signin.callback("google", back.params, binding=binding, method=back.method)
    assert done.status == 302 and "error=" not in done.headers["Location"], done.headers
    return done.cookies["session"].value


async def test_a_link_and_a_step_up_leave_one_session(events: Events) -> None:
    first = await events.signed_in("google", ADA)
    linked = await link_apple(events, first, ADA_APPLE)
    events.signin.clock.advance(120)
    stepped_up = await reauthenticate(events, linked)

    listed = await sessions(events, stepped_up)
    assert [s["id"] for s in listed] == [claims_of(first)["sid"]]
    assert claims_of(stepped_up)["sid"] == claims_of(first)["sid"]
    # The newer proof of login is the session's, in its record and its new token.
    assert claims_of(stepped_up)["auth_time"] > claims_of(first)["auth_time"]
    # Every token of the one session goes on working; ending it ends them all.
    for token in (first, linked, stepped_up):
        assert await events.status(token) == 200
    ended = await events.client.post(
        "/v1/auth/logout", headers={"Authorization": f"Bearer {linked}"}
    )
    assert ended.status in (200, 204), await ended.text()
    for token in (first, linked, stepped_up):
        assert await events.status(token) == 401
