"""Sign in with Apple server-to-server notifications: ``{"payload": <JWT>}`` signed by
the fake Apple with its own key; consent-revoked and account-delete unlink the identity (or
delete the account when it was the only sign-in method) and end its sessions; email-disabled /
email-enabled are recorded on the identity. Every fault is a 400 with the RFC 8935 error body
and changes nothing. On memory, SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from authgate.domain.model import Outcome, ProviderIdentity
from authgate.entrypoints.app.build import RESOURCES
from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.fakeidp.events import EventFault, apple_notification, sign_event
from tests.support.jwt import claims_of

from .conftest import CALLBACK_URL, Events, MakeService, SignIn, events_config

PATH = "/v1/providers/apple/notifications"
ADA = FakeUser(sub="000123.apple-ada.0456", email="ada@privaterelay.appleid.com", name="Ada L")
ADA_GOOGLE = FakeUser(sub="ada-google-1", email="ada@example.com", name="Ada Lovelace")


async def notify(events: Events, body: Any) -> tuple[int, Any]:
    answer = await events.client.post(PATH, json=body)
    payload = await answer.json() if answer.content_type == "application/json" else None
    return answer.status, payload


async def link_apple(events: Events, google_token: str, user: FakeUser) -> str:
    """Link Apple to the account of ``google_token``; the session's new token (the link goes
    on in the session that started it: one browser, one session)."""
    answer = await events.client.get(
        "/v1/auth/apple",
        params={"redirect_uri": CALLBACK_URL.format(name="apple"), "intent": "link"},
        headers={"Accept": "application/json", "Authorization": f"Bearer {google_token}"},
    )
    assert answer.status == 200, await answer.text()
    binding = answer.cookies["__Host-authgate_binding"].value
    details = await answer.json()
    back = await events.idp.authorize(details["authorizationUrl"], user=user)
    done = await events.signin.callback("apple", back.params, binding=binding, method=back.method)
    assert done.status == 302, done.headers
    assert claims_of(done.cookies["session"].value)["sid"] == claims_of(google_token)["sid"]
    return done.cookies["session"].value


async def apple_session(events: Events, user: FakeUser) -> str:
    """A session signed in through Apple (another browser)."""
    answer = await events.signin.complete("apple", user=user, intent="login")
    assert answer.status == 302, answer.headers
    return answer.cookies["session"].value


async def providers_of(events: Events, token: str) -> list[str]:
    answer = await events.client.get("/v1/account", headers={"Authorization": f"Bearer {token}"})
    assert answer.status == 200
    return [p["provider"] for p in (await answer.json())["providers"]]


async def identity(events: Events, sub: str) -> Any:
    return await events.client.app[RESOURCES].stores.accounts.get_identity(
        ProviderIdentity("apple", sub)
    )


@pytest.mark.parametrize("event_type", ["consent-revoked", "account-delete"])
async def test_revoking_apple_unlinks_it_and_ends_its_sessions_only(
    events: Events, event_type: str
) -> None:
    google = await events.signed_in("google", ADA_GOOGLE)
    await link_apple(events, google, ADA)
    apple = await apple_session(events, ADA)
    assert await providers_of(events, google) == ["google", "apple"]

    status, body = await notify(events, apple_notification(events.idp.apple, event_type, ADA.sub))

    assert (status, body) == (200, None)
    assert await events.status(apple) == 401
    assert await providers_of(events, google) == ["google"]
    audited = [e for e in await events.audit() if e.outcome is Outcome.PROVIDER_UNLINKED]
    assert [(e.provider, e.detail) for e in audited] == [("apple", event_type)]


async def test_account_delete_of_the_only_sign_in_method_deletes_the_account(
    events: Events,
) -> None:
    token = await events.signed_in("apple", ADA)
    status, _ = await notify(
        events, apple_notification(events.idp.apple, "account-delete", ADA.sub)
    )
    assert status == 200
    assert await events.status(token) == 401
    assert await identity(events, ADA.sub) is None
    # Signing in again is a new user.
    again = await events.signin.complete("apple", user=ADA, intent="login")
    assert "error=account_not_found" in again.headers["Location"]


async def test_with_deletion_switched_off_the_only_identity_is_kept_and_signed_out(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, tmp_path: Path
) -> None:
    config = events_config(
        fake_idp,
        f"sqlite:///{tmp_path / 'a.db'}",
        {"provider_events": {"delete_account_when_last_identity": False}},
    )
    client = await make_service(config, clock=idp_clock)
    events = Events(SignIn(client, fake_idp, idp_clock), fake_idp)
    token = await events.signed_in("apple", ADA)
    kept = await identity(events, ADA.sub)

    status, _ = await notify(events, apple_notification(fake_idp.apple, "consent-revoked", ADA.sub))

    assert status == 200
    assert await events.status(token) == 401
    assert await identity(events, ADA.sub) == kept
    # Signing in with Apple again (consenting again) reaches the same account.
    again = await events.signin.complete("apple", user=ADA, intent="login")
    assert again.status == 302 and "session" in again.cookies
    answer = await client.get(
        "/v1/account", headers={"Authorization": f"Bearer {again.cookies['session'].value}"}
    )
    assert (await answer.json())["id"] == kept.account_id


async def test_email_forwarding_changes_are_recorded_on_the_identity(events: Events) -> None:
    token = await events.signed_in("apple", ADA)
    apple = events.idp.apple
    disabled = apple_notification(apple, "email-disabled", ADA.sub)
    assert (await notify(events, disabled))[0] == 200
    assert (await identity(events, ADA.sub)).email_disabled is True
    assert (await notify(events, apple_notification(apple, "email-enabled", ADA.sub)))[0] == 200
    assert (await identity(events, ADA.sub)).email_disabled is False

    # The first notification delivered again changes nothing.
    assert (await notify(events, disabled))[0] == 200
    assert (await identity(events, ADA.sub)).email_disabled is False
    assert await events.status(token) == 200  # no session ends for a mail setting
    outcomes = [e.outcome for e in await events.audit() if e.provider == "apple"]
    assert outcomes.count(Outcome.EMAIL_DISABLED) == 1
    assert outcomes.count(Outcome.EMAIL_ENABLED) == 1


async def test_a_replayed_revocation_changes_nothing_twice(events: Events) -> None:
    google = await events.signed_in("google", ADA_GOOGLE)
    await link_apple(events, google, ADA)
    revoked = apple_notification(events.idp.apple, "consent-revoked", ADA.sub)
    assert (await notify(events, revoked))[0] == 200
    apple_again = await link_apple(events, google, ADA)  # the user linked Apple again

    assert (await notify(events, revoked))[0] == 200

    assert await events.status(apple_again) == 200
    assert await providers_of(events, google) == ["google", "apple"]


async def test_unknown_event_types_and_subjects_are_accepted_and_change_nothing(
    events: Events,
) -> None:
    token = await events.signed_in("apple", ADA)
    apple = events.idp.apple
    for body in (
        apple_notification(apple, "brand-new-event", ADA.sub),
        apple_notification(apple, "account-delete", "someone-else"),
    ):
        assert await notify(events, body) == (200, None)
    assert await events.status(token) == 200
    details = [e.detail for e in await events.audit() if e.outcome is Outcome.PROVIDER_EVENT]
    assert sorted(details) == ["account-delete: unknown subject", "unknown"]


EXPECTED_CODES = {
    EventFault.WRONG_SIGNATURE: "invalid_key",
    EventFault.WRONG_ISS: "invalid_issuer",
    EventFault.WRONG_AUD: "invalid_audience",
    EventFault.STALE_IAT: "invalid_request",
    EventFault.FUTURE_IAT: "invalid_request",
    EventFault.NO_JTI: "invalid_request",
    EventFault.ALG_NONE: "invalid_key",
}


@pytest.mark.parametrize("fault", list(EventFault))
async def test_a_spoiled_notification_is_refused_with_the_rfc_8935_body(
    events: Events, fault: EventFault
) -> None:
    token = await events.signed_in("apple", ADA)
    body = apple_notification(events.idp.apple, "account-delete", ADA.sub, fault=fault)

    status, answer = await notify(events, body)

    assert status == 400
    assert answer["err"] == EXPECTED_CODES[fault] and answer["description"]
    assert body["payload"] not in str(answer)
    assert await events.status(token) == 200
    assert await identity(events, ADA.sub) is not None


async def test_malformed_bodies_and_events_are_invalid_requests(events: Events) -> None:
    apple = events.idp.apple
    bodies: list[Any] = [
        "not json",
        {"nothing": "here"},
        {"payload": 42},
        {"payload": "a.b.c"},
        {"payload": sign_event(apple, {"events": "{not json"})},
        {"payload": sign_event(apple, {"events": '{"sub": "x"}'})},  # no type
        {"payload": sign_event(apple, {"events": '{"type": "email-enabled"}'})},  # no sub
    ]
    for body in bodies:
        if isinstance(body, str):
            answer = await events.client.post(PATH, data=body)
        else:
            answer = await events.client.post(PATH, json=body)
        assert answer.status == 400, body
        assert (await answer.json())["err"] == "invalid_request"


async def test_an_audience_listed_in_event_audiences_is_accepted(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, tmp_path: Path
) -> None:
    config = events_config(fake_idp, "memory://")
    config["providers"]["apple"]["event_audiences"] = ["com.example.app"]
    client = await make_service(config, clock=idp_clock)
    events = Events(SignIn(client, fake_idp, idp_clock), fake_idp)
    token = await events.signed_in("apple", ADA)
    for aud, expected in (("com.example.other", 400), ("com.example.app", 200)):
        body = apple_notification(fake_idp.apple, "consent-revoked", ADA.sub, aud=aud)
        assert (await notify(events, body))[0] == expected
    assert await events.status(token) == 401
