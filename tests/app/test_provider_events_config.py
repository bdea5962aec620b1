"""The provider-event settings: what the configuration accepts and refuses, and
the receivers' own rate limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app import provider_events as wiring
from authgate.entrypoints.app.config import ConfigError
from tests.fakeidp import FakeIdP, SettableClock
from tests.fakeidp.events import logout_token

from .conftest import MakeService, events_config, load_config


def config_with(tmp_path: Path, fake: FakeIdP, **google: Any) -> Any:
    providers = {name: fake.config(name) for name in ("google", "facebook", "apple")}
    providers["google"] |= google
    return load_config(tmp_path, {"providers": providers})


def test_receivers_follow_the_providers_shape(tmp_path: Path, fake_idp: FakeIdP) -> None:
    config = load_config(tmp_path, events_config(fake_idp, "memory://"))
    routes = [(r.provider, r.shape.value, r.path) for r in wiring.receiver_routes(config)]
    assert routes == [
        ("google", "backchannel_logout", "/v1/providers/google/backchannel-logout"),
        ("google", "risc", "/v1/providers/google/notifications"),
        ("apple", "apple", "/v1/providers/apple/notifications"),
    ]
    paths = assembly.document(config)["paths"]
    for _, _, path in routes:
        assert "post" in paths[path]


def test_paths_can_be_chosen(tmp_path: Path, fake_idp: FakeIdP) -> None:
    config = config_with(
        tmp_path,
        fake_idp,
        backchannel_logout=True,
        backchannel_logout_path="/hooks/google/logout",
        notifications=True,
        notifications_path="/hooks/google/risc",
    )
    assert [r.path for r in wiring.receiver_routes(config)] == [
        "/hooks/google/logout",
        "/hooks/google/risc",
    ]


@pytest.mark.parametrize(
    ("google", "message"),
    [
        ({"backchannel_logout": True, "backchannel_logout_path": "relative"}, "absolute path"),
        ({"notifications": True, "notifications_path": "/v1/auth/google/callback"}, "in use"),
        (
            {
                "backchannel_logout": True,
                "notifications": True,
                "notifications_path": "/v1/providers/google/backchannel-logout",
            },
            "in use",
        ),
    ],
)
def test_unusable_receiver_paths_are_refused(
    tmp_path: Path, fake_idp: FakeIdP, google: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        config_with(tmp_path, fake_idp, **google)


def test_a_provider_without_an_issuer_has_no_receivers(tmp_path: Path, fake_idp: FakeIdP) -> None:
    providers = {"facebook": fake_idp.config("facebook") | {"notifications": True}}
    with pytest.raises(ConfigError, match=r"providers\.facebook\.notifications: needs issuer"):
        load_config(tmp_path, {"providers": providers})


def test_the_event_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"provider_events\.max_age_seconds"):
        load_config(tmp_path, {"provider_events": {"max_age_seconds": 0}})
    with pytest.raises(ConfigError, match=r"ratelimit\.provider_events"):
        load_config(tmp_path, {"ratelimit": {"provider_events": "lots"}})


async def test_the_receivers_are_rate_limited_per_client(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    config = events_config(fake_idp, "memory://", {"ratelimit": {"provider_events": "2/minute"}})
    client = await make_service(config, clock=idp_clock)
    path = "/v1/providers/google/backchannel-logout"
    statuses = []
    for _ in range(3):
        form = {"logout_token": logout_token(fake_idp.google, sub="someone")}
        answer = await client.post(path, data=form)
        statuses.append(answer.status)
    assert statuses == [200, 200, 429]
    assert int(answer.headers["Retry-After"]) > 0
    assert (await answer.json())["error"] == "rate_limited"
