"""The embedded default (SQLite in a file) keeps accounts across a restart of the service."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakeidp import FakeIdP, FakeUser, SettableClock

from .conftest import APP_URL, CALLBACK_URL, PROVIDERS, MakeService, SignIn


async def test_an_account_survives_a_restart_on_sqlite(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, tmp_path: Path
) -> None:
    overrides: dict[str, Any] = {
        "database": {"url": f"sqlite:///{tmp_path}/authgate.db"},
        "app": {"url": APP_URL, "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS]},
        "providers": {p: fake_idp.config(p) for p in PROVIDERS},
    }
    user = FakeUser(sub="persistent")
    first = SignIn(await make_service(overrides, clock=idp_clock), fake_idp, idp_clock)
    registered = await first.complete(user=user, intent="register")
    assert registered.headers["Location"] == f"{APP_URL}/onboarding"
    await first.client.close()  # stops the service: its cleanup closes the database

    second = SignIn(await make_service(overrides, clock=idp_clock), fake_idp, idp_clock)
    response = await second.complete(user=user)
    assert response.headers["Location"] == f"{APP_URL}/dashboard"
    stranger = await second.complete(user=FakeUser(sub="never-registered"))
    assert "error=account_not_found" in stranger.headers["Location"]
