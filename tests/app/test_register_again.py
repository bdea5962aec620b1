"""A registration (``intent=register``) of an identity that already has an account.

The callback's one account step looks the identity up first, whatever the intent: the user
ends up signed in to the account they have, audited once, or is refused exactly as any
sign-in through a disabled identity is. On memory, SQLite and PostgreSQL.
"""

from __future__ import annotations

import base64
import json
import logging

import pytest

from authgate.domain.model import Outcome
from tests.fakeidp import FakeUser
from tests.fakeidp.events import security_event

from .conftest import Events
from .test_risc_events import PATH, SECEVENT

GRACE = FakeUser(sub="grace-google-7", email="grace@example.com", name="Grace Hopper")


def subject_of(token: str) -> str:
    payload = token.split(".")[1]
    return str(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"])


def audit_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "authgate.audit"]


async def test_registering_again_signs_in_to_the_same_account_audited_once(
    events: Events, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="authgate.audit")
    first = await events.signin.complete("google", user=GRACE, intent="register")
    assert first.status == 302 and "/onboarding" in first.headers["Location"]
    again = await events.signin.complete("google", user=GRACE, intent="register")
    assert again.status == 302, again.headers
    assert "/onboarding" not in again.headers["Location"]  # not a first-time user any more
    token = again.cookies["session"].value
    assert subject_of(token) == subject_of(first.cookies["session"].value)
    assert await events.status(token) == 200

    stored = [e for e in await events.audit() if e.provider == "google"]
    assert sorted(e.outcome.value for e in stored) == ["registered", "signed_in"]
    lines = audit_lines(caplog)
    assert len(lines) == 2, lines  # one line per sign-in
    assert "outcome=registered" in lines[0] and "outcome=signed_in" in lines[1]


async def test_registering_through_a_disabled_identity_is_refused(
    events: Events, caplog: pytest.LogCaptureFixture
) -> None:
    token = (
        (await events.signin.complete("google", user=GRACE, intent="register"))
        .cookies["session"]
        .value
    )
    disabled = security_event(events.idp.google, "account-disabled", GRACE.sub, reason="hijacking")
    pushed = await events.client.post(PATH, data=disabled, headers=SECEVENT)
    assert pushed.status == 202
    caplog.set_level(logging.INFO, logger="authgate.audit")

    refused = await events.signin.complete("google", user=GRACE, intent="register")
    location = refused.headers["Location"]
    assert "error=access_denied" in location and "reason=identity_disabled" in location
    assert "session" not in refused.cookies
    assert await events.status(token) == 401
    lines = audit_lines(caplog)
    assert not any("outcome=registered" in line or "outcome=signed_in" in line for line in lines)
    google = [e.outcome for e in await events.audit() if e.provider == "google"]
    assert google.count(Outcome.REGISTERED) == 1 and Outcome.SIGNED_IN not in google
