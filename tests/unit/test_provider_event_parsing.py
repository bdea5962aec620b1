"""The per-shape parsing of verified event tokens (domain/provider_events.py), table-driven."""

from __future__ import annotations

import json
from typing import Any

import pytest

from authgate.domain.provider_events import (
    BACKCHANNEL_LOGOUT,
    RISC_EVENT_TYPE,
    Action,
    MalformedEvent,
    ProviderEvent,
    apple_event,
    logout_event,
    risc_events,
)

GOOGLE = ("https://accounts.google.com",)


def subject(sub: str = "u-1", iss: str = "https://accounts.google.com/") -> dict[str, str]:
    return {"subject_type": "iss-sub", "iss": iss, "sub": sub}


def test_a_logout_names_its_sid_and_sub() -> None:
    claims = {"events": {BACKCHANNEL_LOGOUT: {}}, "sub": "u-1", "sid": "s-1"}
    assert logout_event(claims) == ProviderEvent(
        "backchannel-logout", Action.END_SESSIONS, "u-1", "s-1"
    )


@pytest.mark.parametrize(
    "claims",
    [
        {"events": {BACKCHANNEL_LOGOUT: {}}},
        {"events": {BACKCHANNEL_LOGOUT: {}}, "sub": "", "sid": "s"},
        {"events": {BACKCHANNEL_LOGOUT: {}}, "sub": "a\nb"},
        {"events": {BACKCHANNEL_LOGOUT: {}}, "sub": "x" * 256},
        {"events": {BACKCHANNEL_LOGOUT: {}}, "sub": 7},
        {"events": [BACKCHANNEL_LOGOUT], "sub": "u"},
    ],
)
def test_malformed_logouts_are_refused(claims: dict[str, Any]) -> None:
    with pytest.raises(MalformedEvent):
        logout_event(claims)


def test_apple_events_come_as_a_json_string_or_an_object() -> None:
    event = {"type": "email-disabled", "sub": "a-1", "email": "x@privaterelay.appleid.com"}
    expected = ProviderEvent("email-disabled", Action.EMAIL_DISABLED, "a-1")
    assert apple_event({"events": json.dumps(event)}) == expected
    assert apple_event({"events": event}) == expected
    assert apple_event({"events": json.dumps(event | {"type": "new"})}).action is Action.NOTHING


def test_a_set_with_several_events_gives_each() -> None:
    claims = {
        "events": {
            RISC_EVENT_TYPE + "account-disabled": {"subject": subject(), "reason": "hijacking"},
            RISC_EVENT_TYPE + "sessions-revoked": {"subject": subject()},
            "https://example.com/other": {},
        }
    }
    got = risc_events(claims, GOOGLE)
    assert [(e.kind, e.action, e.subject, e.reason) for e in got] == [
        ("account-disabled", Action.DISABLE_IDENTITY, "u-1", "hijacking"),
        ("sessions-revoked", Action.END_SESSIONS, "u-1", None),
        ("unknown", Action.NOTHING, None, None),
    ]


@pytest.mark.parametrize(
    "given",
    [
        subject(iss="https://evil.example/"),
        {"subject_type": "email", "email": "u@example.com"},
        {"format": "iss_sub", "iss": "https://accounts.google.com"},  # no sub
        "u-1",
    ],
)
def test_a_subject_of_another_issuer_or_format_acts_on_nobody(given: Any) -> None:
    events = {RISC_EVENT_TYPE + "sessions-revoked": {"subject": given}}
    [event] = risc_events({"events": events}, GOOGLE)
    assert (event.subject, event.action) == (None, Action.NOTHING)
