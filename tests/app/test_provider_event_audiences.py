"""Every event token's ``aud`` is validated as an ID token's (OIDC Core 3.1.3.7 step 3, which
Back-Channel Logout 1.0 section 2.6 applies to logout tokens): it names us, and any other
audience must be listed in ``providers.<name>.trusted_audiences``: a token also addressed to a
party we do not trust is one that party holds and may replay to us. And a logout token without
``exp`` is refused (Back-Channel Logout 1.0, errata set 1, makes it required)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientResponse

from tests.fakeidp import FakeIdP, FakeProvider, FakeUser, SettableClock
from tests.fakeidp.events import apple_notification, logout_token, security_event

from .conftest import Events, MakeService, SignIn, events_config

USER = {"google": FakeUser(sub="aud-google-1"), "apple": FakeUser(sub="000777.aud-apple.0001")}


async def make_events(
    make_service: MakeService, fake: FakeIdP, clock: SettableClock, trusted: list[str]
) -> Events:
    config = events_config(fake, "memory://")
    for name in ("google", "apple"):
        config["providers"][name]["trusted_audiences"] = trusted
    client = await make_service(config, clock=clock)
    return Events(SignIn(client, fake, clock), fake)


async def post(
    events: Events, shape: str, p: FakeProvider, sub: str, **claims: Any
) -> ClientResponse:
    """The shape's event ending ``sub``'s sessions, with ``claims`` set (None leaves one out)."""
    if shape == "apple":
        body = apple_notification(p, "consent-revoked", sub, **claims)
        return await events.client.post("/v1/providers/apple/notifications", json=body)
    if shape == "backchannel_logout":
        token = logout_token(p, sub=sub, **claims)
        return await events.client.post(
            "/v1/providers/google/backchannel-logout", data={"logout_token": token}
        )
    token = security_event(p, "sessions-revoked", sub, **claims)
    return await events.client.post(
        "/v1/providers/google/notifications",
        data=token,
        headers={"Content-Type": "application/secevent+jwt"},
    )


SHAPES = {"apple": "apple", "backchannel_logout": "google", "risc": "google"}


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_an_event_token_for_an_untrusted_extra_audience_is_refused(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, shape: str
) -> None:
    events = await make_events(make_service, fake_idp, idp_clock, ["partner-client"])
    p = fake_idp[SHAPES[shape]]
    user = USER[SHAPES[shape]]
    session = await events.signed_in(SHAPES[shape], user)

    answer = await post(events, shape, p, user.sub, aud=[p.client_id, "someone-else"])
    assert answer.status == 400
    body = await answer.json()
    assert body["err"] == "invalid_audience" and "untrusted" in body["description"]
    assert await events.status(session) == 200

    # A trusted extra audience is accepted, as for ID tokens.
    answer = await post(events, shape, p, user.sub, aud=[p.client_id, "partner-client"])
    assert answer.status in (200, 202)
    assert await events.status(session) == 401


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_an_event_token_with_an_empty_or_malformed_audience_is_refused(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, shape: str
) -> None:
    events = await make_events(make_service, fake_idp, idp_clock, [])
    p = fake_idp[SHAPES[shape]]
    user = USER[SHAPES[shape]]
    session = await events.signed_in(SHAPES[shape], user)
    for aud in ([], [p.client_id, 7]):
        answer = await post(events, shape, p, user.sub, aud=aud)
        assert answer.status == 400, aud
        assert (await answer.json())["err"] == "invalid_audience"
    assert await events.status(session) == 200


async def test_a_logout_token_without_exp_is_refused(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    events = await make_events(make_service, fake_idp, idp_clock, [])
    user = USER["google"]
    session = await events.signed_in("google", user)
    answer = await post(events, "backchannel_logout", fake_idp.google, user.sub, exp=None)
    assert answer.status == 400
    body = await answer.json()
    assert body["error"] == "invalid_request" and body["error_description"].endswith("no exp")
    assert await events.status(session) == 200
    # Security Event Tokens carry no exp (RFC 8417): still accepted without one.
    answer = await post(events, "risc", fake_idp.google, user.sub)
    assert answer.status == 202
    assert await events.status(session) == 401
