"""What each provider event means (domain/provider_events.py ``decide``), from the claims of a
verified token to the sessions ended, the identity's state, the kept provider token, the audit
and the review flag: one case per Google Cross-Account Protection event type and reason, per
Apple notification type, and per back-channel logout form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from authgate.domain.model import Outcome
from authgate.domain.provider_events import (
    BACKCHANNEL_LOGOUT,
    OAUTH_EVENT_TYPE,
    RISC_EVENT_TYPE,
    Audit,
    Decision,
    Ending,
    KeptToken,
    ProviderEvent,
    apple_event,
    decide,
    logout_event,
    risc_events,
)

GOOGLE = ("https://accounts.google.com",)
SUBJECT = {"subject_type": "iss-sub", "iss": "https://accounts.google.com/", "sub": "u-1"}


def risc(event_type: str, **payload: Any) -> ProviderEvent:
    [event] = risc_events({"events": {event_type: {"subject": SUBJECT} | payload}}, GOOGLE)
    return event


def apple(kind: str) -> ProviderEvent:
    return apple_event({"events": json.dumps({"type": kind, "sub": "a-1"})})


def signed_out(kind: str, **changes: Any) -> Decision:
    return Decision(kind, Outcome.PROVIDER_SIGNED_OUT, kind, counted=True, **changes)


GOOGLE_CASES = {
    "sessions-revoked": (
        risc(RISC_EVENT_TYPE + "sessions-revoked"),
        signed_out("sessions-revoked", ending=Ending.EVERY_PROVIDER),
    ),
    "tokens-revoked": (
        risc(OAUTH_EVENT_TYPE + "tokens-revoked"),
        signed_out("tokens-revoked", ending=Ending.EVERY_PROVIDER, kept_token=KeptToken.DROP),
    ),
    "token-revoked": (
        risc_events(
            {
                "events": {
                    OAUTH_EVENT_TYPE + "token-revoked": {
                        "subject": {
                            "subject_type": "oauth_token",
                            "token_type": "refresh_token",
                            "token_identifier_alg": "hash_base64_sha512_sha512",
                            "token": "abc",
                        }
                    }
                }
            },
            GOOGLE,
        )[0],
        Decision(
            "token-revoked",
            Outcome.PROVIDER_EVENT,
            "token-revoked: refresh_token",
            needs_account=False,
        ),
    ),
    "account-disabled hijacking": (
        risc(RISC_EVENT_TYPE + "account-disabled", reason="hijacking"),
        Decision(
            "account-disabled",
            Outcome.IDENTITY_DISABLED,
            "account-disabled: hijacking",
            ending=Ending.EVERY_PROVIDER,
            disable_identity="hijacking",
            kept_token=KeptToken.REVOKE,
        ),
    ),
    "account-disabled bulk-account": (
        risc(RISC_EVENT_TYPE + "account-disabled", reason="bulk-account"),
        Decision(
            "account-disabled",
            Outcome.PROVIDER_EVENT,
            "account-disabled: bulk-account",
            needs_account=False,
            review=True,
        ),
    ),
    "account-disabled without reason": (
        risc(RISC_EVENT_TYPE + "account-disabled"),
        Decision(
            "account-disabled",
            Outcome.IDENTITY_DISABLED,
            "account-disabled: unspecified",
            ending=Ending.THIS_PROVIDER,
            disable_identity="unspecified",
        ),
    ),
    "account-disabled other reason": (
        risc(RISC_EVENT_TYPE + "account-disabled", reason="policy"),
        Decision(
            "account-disabled",
            Outcome.IDENTITY_DISABLED,
            "account-disabled: policy",
            ending=Ending.THIS_PROVIDER,
            disable_identity="policy",
        ),
    ),
    "account-enabled": (
        risc(RISC_EVENT_TYPE + "account-enabled"),
        Decision(
            "account-enabled", Outcome.IDENTITY_ENABLED, "account-enabled", enable_identity=True
        ),
    ),
    "account-credential-change-required": (
        risc(RISC_EVENT_TYPE + "account-credential-change-required"),
        Decision(
            "account-credential-change-required",
            Outcome.PROVIDER_EVENT,
            "account-credential-change-required",
            needs_account=False,
            review=True,
        ),
    ),
    "verification": (
        risc_events({"events": {RISC_EVENT_TYPE + "verification": {"state": "x"}}}, GOOGLE)[0],
        Decision("verification", Outcome.PROVIDER_EVENT, "verification", needs_account=False),
    ),
    "an unknown type": (
        risc("https://schemas.example.com/event-type/other"),
        Decision(
            "unknown", Outcome.PROVIDER_EVENT, "unknown", needs_account=False, unrecognised=True
        ),
    ),
    "a subject of another issuer": (
        risc_events(
            {
                "events": {
                    RISC_EVENT_TYPE + "sessions-revoked": {
                        "subject": SUBJECT | {"iss": "https://evil.example/"}
                    }
                }
            },
            GOOGLE,
        )[0],
        Decision(
            "sessions-revoked", Outcome.PROVIDER_EVENT, "sessions-revoked", needs_account=False
        ),
    ),
}

APPLE_CASES = {
    "consent-revoked": (
        apple("consent-revoked"),
        Decision("consent-revoked", Outcome.PROVIDER_EVENT, "consent-revoked"),
    ),
    "account-delete": (
        apple("account-delete"),
        Decision("account-delete", Outcome.PROVIDER_EVENT, "account-delete"),
    ),
    "account-deleted": (
        apple("account-deleted"),
        Decision("account-deleted", Outcome.PROVIDER_EVENT, "account-deleted"),
    ),
    "email-disabled": (
        apple("email-disabled"),
        Decision("email-disabled", Outcome.EMAIL_DISABLED, "email-disabled", email_disabled=True),
    ),
    "email-enabled": (
        apple("email-enabled"),
        Decision("email-enabled", Outcome.EMAIL_ENABLED, "email-enabled", email_disabled=False),
    ),
    "an unknown type": (
        apple("new-thing"),
        Decision(
            "unknown", Outcome.PROVIDER_EVENT, "unknown", needs_account=False, unrecognised=True
        ),
    ),
}

LOGOUT = {"events": {BACKCHANNEL_LOGOUT: {}}}
LOGOUT_CASES = {
    "sid and sub": (
        logout_event(LOGOUT | {"sid": "s-1", "sub": "u-1"}),
        signed_out("backchannel-logout", ending=Ending.PROVIDER_SESSION),
    ),
    "sid alone": (
        logout_event(LOGOUT | {"sid": "s-1"}),
        signed_out("backchannel-logout", ending=Ending.PROVIDER_SESSION, needs_account=False),
    ),
    "sub alone": (
        logout_event(LOGOUT | {"sub": "u-1"}),
        signed_out("backchannel-logout", ending=Ending.THIS_PROVIDER),
    ),
}


@pytest.mark.parametrize(("event", "expected"), GOOGLE_CASES.values(), ids=GOOGLE_CASES.keys())
def test_what_each_cross_account_protection_event_means(
    event: ProviderEvent, expected: Decision
) -> None:
    assert decide(event) == expected


@pytest.mark.parametrize(("event", "expected"), APPLE_CASES.values(), ids=APPLE_CASES.keys())
def test_what_each_apple_notification_means(event: ProviderEvent, expected: Decision) -> None:
    assert decide(event) == expected


@pytest.mark.parametrize(("event", "expected"), LOGOUT_CASES.values(), ids=LOGOUT_CASES.keys())
def test_what_each_backchannel_logout_means(event: ProviderEvent, expected: Decision) -> None:
    assert decide(event) == expected


def test_sessions_ended_are_audited_per_account_with_their_count() -> None:
    decision = decide(logout_event(LOGOUT | {"sid": "s-1"}))
    assert decision.audits(None, {"b": 1, "a": 2}) == [
        Audit(Outcome.PROVIDER_SIGNED_OUT, "a", "backchannel-logout: 2"),
        Audit(Outcome.PROVIDER_SIGNED_OUT, "b", "backchannel-logout: 1"),
    ]
    assert decision.audits(None, {}) == [
        Audit(Outcome.PROVIDER_EVENT, None, "backchannel-logout: no live session")
    ]


def test_a_dropped_kept_token_is_audited_with_the_sessions_ended() -> None:
    decision = GOOGLE_CASES["tokens-revoked"][1]
    assert decision.audits("acc", {"acc": 0}, token_dropped=True) == [
        Audit(Outcome.PROVIDER_SIGNED_OUT, "acc", "tokens-revoked: 0; kept token dropped")
    ]
    assert decision.audits("acc", {"acc": 3}) == [
        Audit(Outcome.PROVIDER_SIGNED_OUT, "acc", "tokens-revoked: 3")
    ]


def test_an_uncounted_event_is_audited_once_for_its_account() -> None:
    decision = GOOGLE_CASES["account-disabled hijacking"][1]
    assert decision.audits("acc", {"acc": 2}) == [
        Audit(Outcome.IDENTITY_DISABLED, "acc", "account-disabled: hijacking")
    ]
    review = GOOGLE_CASES["account-credential-change-required"][1]
    assert review.audits(None, {}) == [
        Audit(Outcome.PROVIDER_EVENT, None, "account-credential-change-required")
    ]


def test_an_event_naming_nobody_known_is_audited_as_such() -> None:
    assert decide(apple("email-disabled")).unknown_subject() == Audit(
        Outcome.PROVIDER_EVENT, None, "email-disabled: unknown subject"
    )
