"""OpenID Connect Back-Channel Logout 1.0: the provider's logout token, signed by
the fake provider with its own key, ends the sessions of its sid and/or sub; every fault is a
400 ``invalid_request`` that changes nothing. On memory, SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from authgate.domain.model import Outcome
from tests.fakeidp import FakeUser
from tests.fakeidp.events import BACKCHANNEL_LOGOUT, EventFault, logout_token

from .conftest import Events

PATH = "/v1/providers/google/backchannel-logout"
ADA = FakeUser(sub="ada-1", email="ada@example.com", name="Ada Lovelace")


async def post_logout(events: Events, token: str | None, **form: str) -> tuple[int, Any, Any]:
    data = dict(form)
    if token is not None:
        data["logout_token"] = token
    answer = await events.client.post(PATH, data=data)
    body = await answer.json() if answer.content_type == "application/json" else None
    return answer.status, body, answer.headers


async def test_a_logout_token_with_the_sid_ends_that_session_only(events: Events) -> None:
    first = await events.signed_in(user=ADA)
    first_sid = events.idp.google.last_sid
    second = await events.signed_in(user=ADA)
    assert first_sid is not None and first_sid != events.idp.google.last_sid

    status, body, headers = await post_logout(
        events, logout_token(events.idp.google, sub=ADA.sub, sid=first_sid)
    )

    assert (status, body) == (200, None)
    assert headers["Cache-Control"] == "no-store"
    assert await events.status(first) == 401
    assert await events.status(second) == 200
    audited = [e for e in await events.audit() if e.outcome is Outcome.PROVIDER_SIGNED_OUT]
    assert len(audited) == 1 and audited[0].provider == "google"


async def test_a_sid_alone_is_enough(events: Events) -> None:
    token = await events.signed_in(user=ADA)
    sid = events.idp.google.last_sid
    status, _, _ = await post_logout(events, logout_token(events.idp.google, sid=sid))
    assert status == 200
    assert await events.status(token) == 401


async def test_a_sub_alone_ends_every_session_signed_in_through_the_provider(
    events: Events,
) -> None:
    one = await events.signed_in(user=ADA)
    two = await events.signed_in(user=ADA)
    other = await events.signed_in(user=FakeUser(sub="grace-1", email="grace@example.com"))
    status, _, _ = await post_logout(events, logout_token(events.idp.google, sub=ADA.sub))
    assert status == 200
    assert [await events.status(t) for t in (one, two, other)] == [401, 401, 200]


async def test_a_replayed_logout_token_changes_nothing_twice(events: Events) -> None:
    await events.signed_in(user=ADA)
    token = logout_token(events.idp.google, sub=ADA.sub)
    assert (await post_logout(events, token))[0] == 200
    later = await events.signed_in(user=ADA)  # signed in again after the logout

    status, _, _ = await post_logout(events, token)

    assert status == 200  # the provider may retry a delivery: accepted, not acted on again
    assert await events.status(later) == 200
    audited = [e for e in await events.audit() if e.outcome is Outcome.PROVIDER_SIGNED_OUT]
    assert len(audited) == 1


async def test_an_unknown_subject_or_sid_is_accepted_and_changes_nothing(events: Events) -> None:
    token = await events.signed_in(user=ADA)
    for logout in (
        logout_token(events.idp.google, sub="nobody-here"),
        logout_token(events.idp.google, sid="no-such-sid"),
        logout_token(events.idp.google, sub="nobody-here", sid=events.idp.google.last_sid),
    ):
        assert (await post_logout(events, logout))[0] == 200
    assert await events.status(token) == 200


@pytest.mark.parametrize("fault", list(EventFault))
async def test_a_spoiled_logout_token_is_refused_and_ends_nothing(
    events: Events, fault: EventFault
) -> None:
    token = await events.signed_in(user=ADA)
    logout = logout_token(events.idp.google, sub=ADA.sub, fault=fault)

    status, body, headers = await post_logout(events, logout)

    assert status == 400
    assert body["error"] == "invalid_request" and body["error_description"]
    # RFC 8935's members too (every receiver's refusal has its error body).
    assert body["err"] in {"invalid_request", "invalid_key", "invalid_issuer", "invalid_audience"}
    assert body["description"] == body["error_description"]
    assert logout not in str(body)
    assert headers["Cache-Control"] == "no-store"
    assert await events.status(token) == 200
    refused = [e for e in await events.audit() if e.outcome is Outcome.PROVIDER_EVENT_REJECTED]
    assert len(refused) == 1


@pytest.mark.parametrize(
    "claims",
    [
        {"events": None},  # no events claim
        {"events": {"https://example.com/other-event": {}}},
        {"events": {BACKCHANNEL_LOGOUT: "not an object"}},
        {"nonce": "an ID token's"},
        {"sub": None, "sid": None},
    ],
    ids=["no-events", "other-event", "event-not-object", "nonce", "neither-sub-nor-sid"],
)
async def test_a_logout_token_that_breaks_section_2_6_is_refused(
    events: Events, claims: dict[str, Any]
) -> None:
    token = await events.signed_in(user=ADA)
    base: dict[str, Any] = {"sub": ADA.sub}
    body = {k: v for k, v in (base | claims).items() if v is not None}
    if "events" in claims and claims["events"] is None:
        logout = _without_events(events, body)
    else:
        logout = logout_token(events.idp.google, **body)
    status, answer, _ = await post_logout(events, logout)
    assert status == 400 and answer["error"] == "invalid_request"
    assert await events.status(token) == 200


def _without_events(events: Events, claims: dict[str, Any]) -> str:
    from tests.fakeidp.events import sign_event

    return sign_event(events.idp.google, claims, typ="logout+jwt")


async def test_malformed_bodies_are_refused(events: Events) -> None:
    cases = [
        await events.client.post(PATH, data={}),
        await events.client.post(
            PATH,
            data="logout_token=a&logout_token=b",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        ),
        await events.client.post(PATH, json={"logout_token": "x.y.z"}),
        await events.client.post(PATH, data={"logout_token": "not-a-jwt"}),
        await events.client.post(
            PATH, data=b"\xff\xfe", headers={"Content-Type": "application/x-www-form-urlencoded"}
        ),
    ]
    for answer in cases:
        assert answer.status == 400, await answer.text()
        assert (await answer.json())["error"] == "invalid_request"


async def test_the_receiver_is_in_the_openapi_document_without_session_auth(
    events: Events,
) -> None:
    document = await (await events.client.get("/openapi.json")).json()
    operation = document["paths"][PATH]["post"]
    assert "security" not in operation
    assert "application/x-www-form-urlencoded" in operation["requestBody"]["content"]
    assert {"200", "400", "429"} <= set(operation["responses"])
