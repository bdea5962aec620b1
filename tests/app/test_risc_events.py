"""Security Event Tokens of Google's Cross-Account Protection (RISC; RFC 8417, pushed per RFC
8935), signed by the fake Google with its own key, the key set named by its RISC
configuration document. 202 on success, 400 ``{"err", "description"}`` for a bad
token, unknown events accepted. On memory, SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from authgate.domain.model import Outcome
from tests.fakeidp import FakeUser
from tests.fakeidp.events import EventFault, security_event, sign_event

from .conftest import Events
from .test_apple_notifications import apple_session, link_apple

PATH = "/v1/providers/google/notifications"
ADA = FakeUser(sub="ada-google-1", email="ada@example.com", name="Ada Lovelace")
ADA_APPLE = FakeUser(sub="000123.apple-ada.0456", email="ada@privaterelay.appleid.com")
SECEVENT = {"Content-Type": "application/secevent+jwt"}
# Google's token events are OAuth event types, not RISC's.
TOKENS_REVOKED = "https://schemas.openid.net/secevent/oauth/event-type/tokens-revoked"
TOKEN_REVOKED = "https://schemas.openid.net/secevent/oauth/event-type/token-revoked"


async def push(events: Events, token: str) -> tuple[int, Any]:
    answer = await events.client.post(PATH, data=token, headers=SECEVENT)
    body = await answer.json() if answer.content_type == "application/json" else None
    if answer.status == 202:
        assert await answer.read() == b""
    return answer.status, body


def outcomes(audit: list[Any]) -> list[Outcome]:
    return [e.outcome for e in audit if e.provider == "google"]


@pytest.mark.parametrize("event_type", ["sessions-revoked", TOKENS_REVOKED])
async def test_revoked_sessions_end_every_session_of_the_account(
    events: Events, event_type: str
) -> None:
    google = await events.signed_in("google", ADA)
    await link_apple(events, google, ADA_APPLE)
    apple = await apple_session(events, ADA_APPLE)
    other = await events.signed_in("google", FakeUser(sub="grace-1", email="grace@example.com"))

    assert await push(events, security_event(events.idp.google, event_type, ADA.sub)) == (
        202,
        None,
    )

    assert [await events.status(t) for t in (google, apple, other)] == [401, 401, 200]
    assert Outcome.PROVIDER_SIGNED_OUT in outcomes(await events.audit())
    # Signing in again is allowed: the provider ended sessions, it did not disable anyone.
    assert await events.signed_in("google", ADA)


async def test_a_hijacked_account_loses_every_session_and_cannot_sign_in_until_enabled(
    events: Events,
) -> None:
    google = await events.signed_in("google", ADA)
    await link_apple(events, google, ADA_APPLE)
    apple = await apple_session(events, ADA_APPLE)
    fake = events.idp.google

    disabled = security_event(fake, "account-disabled", ADA.sub, reason="hijacking")
    assert (await push(events, disabled))[0] == 202

    assert [await events.status(t) for t in (google, apple)] == [401, 401]
    refused = await events.signin.complete("google", user=ADA)
    location = refused.headers["Location"]
    assert "error=access_denied" in location and "reason=identity_disabled" in location
    as_json = await events.signin.complete(
        "google", user=ADA, headers={"Accept": "application/json"}
    )
    assert as_json.status == 403
    assert (await as_json.json())["error"] == "access_denied"
    # Apple still signs the user in: only the Google identity is disabled.
    assert await events.signed_in("apple", ADA_APPLE)

    assert (await push(events, security_event(fake, "account-enabled", ADA.sub)))[0] == 202
    again = await events.signed_in("google", ADA)
    assert await events.status(again) == 200
    seen = outcomes(await events.audit())
    assert Outcome.IDENTITY_DISABLED in seen and Outcome.IDENTITY_ENABLED in seen


async def test_disabling_without_a_reason_ends_the_providers_sessions_and_refuses_it(
    events: Events,
) -> None:
    google = await events.signed_in("google", ADA)
    await link_apple(events, google, ADA_APPLE)
    apple = await apple_session(events, ADA_APPLE)
    token = security_event(events.idp.google, "account-disabled", ADA.sub)
    assert (await push(events, token))[0] == 202
    assert [await events.status(t) for t in (google, apple)] == [401, 200]
    refused = await events.signin.complete("google", user=ADA)
    assert "reason=identity_disabled" in refused.headers["Location"]
    details = [e.detail for e in await events.audit() if e.outcome is Outcome.IDENTITY_DISABLED]
    assert details == ["account-disabled: unspecified"]


async def test_an_account_disabled_for_bulk_creation_is_flagged_for_review_only(
    events: Events, caplog: pytest.LogCaptureFixture
) -> None:
    # Google asks to look into the user's activity: it says nothing about who holds our
    # sessions, and the Google account cannot sign in anyway.
    google = await events.signed_in("google", ADA)
    token = security_event(events.idp.google, "account-disabled", ADA.sub, reason="bulk-account")
    with caplog.at_level(logging.WARNING, logger="authgate.security"):
        assert (await push(events, token))[0] == 202
    assert await events.status(google) == 200
    assert "account-disabled: bulk-account" in caplog.text and "to review" in caplog.text
    details = [e.detail for e in await events.audit() if e.outcome is Outcome.PROVIDER_EVENT]
    assert details == ["account-disabled: bulk-account"]
    assert Outcome.IDENTITY_DISABLED not in outcomes(await events.audit())


async def test_a_revoked_refresh_token_is_recognised_and_changes_no_session(
    events: Events,
) -> None:
    # token-revoked names a token, not a user: a Google refresh token, which authgate never
    # holds (it asks Google for no offline access; the token it keeps is the access token).
    google = await events.signed_in("google", ADA)
    subject = {
        "subject_type": "oauth_token",
        "token_type": "refresh_token",
        "token_identifier_alg": "prefix",
        "token": "1//0gAbCdEfGhIjK",
    }
    token = security_event(events.idp.google, TOKEN_REVOKED, None, subject=subject)
    assert await push(events, token) == (202, None)
    assert await events.status(google) == 200
    details = [e.detail for e in await events.audit() if e.outcome is Outcome.PROVIDER_EVENT]
    assert details == ["token-revoked: refresh_token"]


async def test_tokens_revoked_in_the_risc_namespace_is_not_a_google_event(
    events: Events,
) -> None:
    google = await events.signed_in("google", ADA)
    token = security_event(events.idp.google, "tokens-revoked", ADA.sub)  # RISC's namespace
    assert await push(events, token) == (202, None)
    assert await events.status(google) == 200
    details = [e.detail for e in await events.audit() if e.outcome is Outcome.PROVIDER_EVENT]
    assert details == ["unknown"]


@pytest.mark.parametrize(
    "event_type", ["account-credential-change-required", "verification", "account-purged"]
)
async def test_informational_and_unknown_events_are_accepted_and_audited(
    events: Events, event_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    google = await events.signed_in("google", ADA)
    sub = None if event_type == "verification" else ADA.sub
    token = security_event(events.idp.google, event_type, sub, state="state-123")
    with caplog.at_level(logging.INFO, logger="authgate.provider_events"):
        assert await push(events, token) == (202, None)
    assert await events.status(google) == 200
    details = [e.detail for e in await events.audit() if e.outcome is Outcome.PROVIDER_EVENT]
    expected = "unknown" if event_type == "account-purged" else event_type
    assert details == [expected]
    if event_type == "account-purged":
        assert "event type we do not act on" in caplog.text
    assert token not in caplog.text


async def test_an_unknown_subject_is_accepted_and_changes_nothing(events: Events) -> None:
    google = await events.signed_in("google", ADA)
    fake = events.idp.google
    for token in (
        security_event(fake, "sessions-revoked", "somebody-else"),
        security_event(fake, "sessions-revoked", ADA.sub, subject_type="email"),
    ):
        assert (await push(events, token))[0] == 202
    assert await events.status(google) == 200


async def test_a_replayed_token_changes_nothing_twice(events: Events) -> None:
    await events.signed_in("google", ADA)
    token = security_event(events.idp.google, "sessions-revoked", ADA.sub)
    assert (await push(events, token))[0] == 202
    later = await events.signed_in("google", ADA)
    assert (await push(events, token))[0] == 202
    assert await events.status(later) == 200
    assert outcomes(await events.audit()).count(Outcome.PROVIDER_SIGNED_OUT) == 1


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
async def test_a_spoiled_token_is_refused_with_the_rfc_8935_body(
    events: Events, fault: EventFault
) -> None:
    google = await events.signed_in("google", ADA)
    token = security_event(
        events.idp.google, "account-disabled", ADA.sub, reason="hijacking", fault=fault
    )
    status, body = await push(events, token)
    assert status == 400
    assert body["err"] == EXPECTED_CODES[fault] and body["description"]
    assert await events.status(google) == 200
    assert await events.signed_in("google", ADA)


async def test_malformed_bodies_are_invalid_requests(events: Events) -> None:
    fake = events.idp.google
    for token in (
        "",
        "not-a-jwt",
        sign_event(fake, {"iss": fake.issuer + "/", "events": "not an object"}),
        sign_event(fake, {"iss": fake.issuer + "/", "events": {}}),
        sign_event(
            fake,
            {"iss": fake.issuer + "/", "events": {"https://x.example/e": "not an object"}},
        ),
    ):
        status, body = await push(events, token)
        assert status == 400, token
        assert body["err"] == "invalid_request"


async def test_keys_that_cannot_be_loaded_answer_503_so_the_provider_retries(
    events: Events,
) -> None:
    events.idp.google.jwks_down = True
    answer = await events.client.post(
        PATH, data=security_event(events.idp.google, "verification", None), headers=SECEVENT
    )
    assert answer.status == 503
    assert answer.headers["Retry-After"]
