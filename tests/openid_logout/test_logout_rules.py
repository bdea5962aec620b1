"""The rules of logout that need no running service: the redirect back to a client, the logout
token's claims, the configuration's bounds, and that every session ends through one place."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from authgate.domain.openid.logout import (
    BACKCHANNEL_LOGOUT_EVENT,
    PendingLogout,
    logout_token_claims,
    post_logout_redirect,
)
from authgate.entrypoints.app.config import ConfigError
from tests.app.conftest import load_config

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(
    ("uri", "state", "expected"),
    [
        ("https://a.example/out", None, "https://a.example/out"),
        ("https://a.example/out", "x y", "https://a.example/out?state=x+y"),
        ("https://a.example/out?from=op", "s", "https://a.example/out?from=op&state=s"),
        ("https://a.example/out?", "s", "https://a.example/out?state=s"),
        ("com.example.app:/out", "&=", "com.example.app:/out?state=%26%3D"),
    ],
)
def test_the_state_is_added_to_the_registered_uri_only_when_sent(
    uri: str, state: str | None, expected: str
) -> None:
    assert post_logout_redirect(uri, state) == expected


def test_a_logout_tokens_claims() -> None:
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    pending = PendingLogout("r", "webapp", "acct", "sid-1", t0, t0)
    claims = logout_token_claims(pending, t0 + dt.timedelta(hours=1), "jti-1")
    issued = int(t0.timestamp()) + 3600
    assert claims == {
        "aud": "webapp",
        "iat": issued,
        "exp": issued + 120,
        "jti": "jti-1",
        "events": {BACKCHANNEL_LOGOUT_EVENT: {}},
        "sid": "sid-1",
        "sub": "acct",
    }


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"retry_initial_seconds": 0}, "logout_tokens.retry_initial_seconds: must be positive"),
        (
            {"retry_initial_seconds": 10, "retry_max_seconds": 5},
            "logout_tokens.retry_max_seconds: must be at least retry_initial_seconds",
        ),
        ({"give_up_after_seconds": -1}, "logout_tokens.give_up_after_seconds: must be positive"),
        ({"poll_seconds": 0}, "logout_tokens.poll_seconds: must be between 0 and 3600"),
        (
            {"lease_seconds": 10, "timeout_seconds": 10},
            "logout_tokens.lease_seconds: must be longer than timeout_seconds",
        ),
        ({"retries": 3}, "logout_tokens.retries: unknown key"),
    ],
)
def test_bad_logout_token_settings_stop_start_up_with_one_line(
    tmp_path: Path, settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, {"logout_tokens": settings})
    assert str(raised.value) == message


def test_sessions_end_only_through_the_sessions_service() -> None:
    """Whatever ends a session must end it through the sessions service's methods in a unit
    of work, so that its clients are told and its token families revoked: no other module
    calls the session records' revoking methods on a transaction."""
    revoking = re.compile(r"\btx\.sessions\.revoke\w*\(")
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if revoking.search(path.read_text()) and path != SRC / "services" / "sessions.py"
    ]
    assert offenders == []
