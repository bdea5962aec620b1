"""Provider events signed with a key we have not fetched yet are not lost.

RFC 8935 makes a 400 final: the provider does not deliver that event again. So an event token
whose ``kid`` is not in the cached key set is refused (400 ``invalid_key``) only when a fetch
made for that very token proved the ``kid`` absent; when no such fetch could be made (the floor
between fetches, or the provider's key set unreachable) the receiver answers 503 with
``Retry-After`` and the provider's next delivery is acted on. For each receiver shape: Apple
notifications, back-channel logout tokens, Security Event Tokens (RISC)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest
from aiohttp import ClientResponse

from tests.fakeidp import FakeIdP, FakeProvider, FakeUser, SettableClock
from tests.fakeidp.events import apple_notification, logout_token, security_event

from .conftest import Events, MakeService, SignIn, events_config

FLOOR = 5


@attrs.frozen
class Shape:
    """One receiver: how to post its body, a harmless event, and an event that ends the
    user's session (signed by ``kid`` when given)."""

    provider: str
    post: Callable[[Events, Any], Awaitable[ClientResponse]]
    harmless: Callable[[FakeProvider], Any]
    ending: Callable[[FakeProvider, str, str | None], Any]
    success: int


async def post_apple(events: Events, body: Any) -> ClientResponse:
    return await events.client.post("/v1/providers/apple/notifications", json=body)


async def post_logout(events: Events, token: Any) -> ClientResponse:
    return await events.client.post(
        "/v1/providers/google/backchannel-logout", data={"logout_token": token}
    )


async def post_set(events: Events, token: Any) -> ClientResponse:
    return await events.client.post(
        "/v1/providers/google/notifications",
        data=token,
        headers={"Content-Type": "application/secevent+jwt"},
    )


SHAPES = {
    "apple": Shape(
        "apple",
        post_apple,
        lambda p: apple_notification(p, "email-enabled", "somebody-else"),
        lambda p, sub, kid: apple_notification(p, "consent-revoked", sub, kid=kid),
        200,
    ),
    "backchannel_logout": Shape(
        "google",
        post_logout,
        lambda p: logout_token(p, sub="somebody-else"),
        lambda p, sub, kid: logout_token(p, sub=sub, kid=kid),
        200,
    ),
    "risc": Shape(
        "google",
        post_set,
        lambda p: security_event(p, "verification", None, state="s"),
        lambda p, sub, kid: security_event(p, "sessions-revoked", sub, kid=kid),
        202,
    ),
}


@pytest.fixture
async def events(make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock) -> Events:
    client = await make_service(events_config(fake_idp, "memory://"), clock=idp_clock)
    return Events(SignIn(client, fake_idp, idp_clock), fake_idp)


async def ready(events: Events, shape: Shape) -> tuple[FakeProvider, str, FakeUser]:
    """A user signed in through the shape's provider, and its event keys fetched a moment ago
    (by a harmless event)."""
    fake = events.idp[shape.provider]
    user = FakeUser(sub=f"{shape.provider}-keys-1", email="keys@example.com")
    token = await events.signed_in(shape.provider, user)
    assert (await shape.post(events, shape.harmless(fake))).status == shape.success
    return fake, token, user


@pytest.mark.parametrize("name", list(SHAPES))
async def test_an_event_signed_with_a_new_key_within_the_floor_is_retried_not_refused(
    events: Events, name: str
) -> None:
    shape = SHAPES[name]
    fake, session, user = await ready(events, shape)
    fake.rotate_keys(keep_previous=True)  # the provider signs with a key published just now
    body = shape.ending(fake, user.sub, None)

    answer = await shape.post(events, body)
    assert answer.status == 503, await answer.text()
    assert int(answer.headers["Retry-After"]) > 0
    assert await events.status(session) == 200  # nothing done yet

    events.signin.clock.advance(FLOOR)  # the provider delivers it again later
    assert (await shape.post(events, body)).status == shape.success
    assert await events.status(session) == 401


@pytest.mark.parametrize("name", list(SHAPES))
async def test_an_event_with_a_new_key_while_the_key_set_is_unreachable_is_retried(
    events: Events, name: str
) -> None:
    shape = SHAPES[name]
    fake, session, user = await ready(events, shape)
    fake.rotate_keys()
    fake.jwks_down = True
    events.signin.clock.advance(FLOOR)
    body = shape.ending(fake, user.sub, None)

    answer = await shape.post(events, body)
    assert answer.status == 503
    assert answer.headers["Retry-After"]
    assert await events.status(session) == 200

    fake.jwks_down = False
    events.signin.clock.advance(FLOOR)
    assert (await shape.post(events, body)).status == shape.success
    assert await events.status(session) == 401


@pytest.mark.parametrize("name", list(SHAPES))
async def test_a_kid_that_a_fetch_made_for_the_token_did_not_find_is_refused(
    events: Events, name: str
) -> None:
    shape = SHAPES[name]
    fake, session, user = await ready(events, shape)
    events.signin.clock.advance(FLOOR)
    answer = await shape.post(events, shape.ending(fake, user.sub, "never-published"))
    assert answer.status == 400
    assert (await answer.json())["err"] == "invalid_key"
    assert await events.status(session) == 200
