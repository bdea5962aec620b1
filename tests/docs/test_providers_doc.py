"""docs/providers.md's "Adding any OpenID Connect provider" works as written: a provider named
``gitlab``, configured with exactly the four keys of the page's block (the issuer, the client's
id and secret, the scopes) and its callback URL, signs a person in through a real OpenID
Connect provider (the fake) whose endpoints authgate finds by discovery alone."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.app.conftest import APP_URL, MakeService, make_service  # noqa: F401
from tests.fakeidp import FakeIdP, SettableClock, Shape
from tests.fakeidp.fixtures import idp_clock  # noqa: F401

PAGE = Path(__file__).resolve().parents[2] / "docs" / "providers.md"


def _documented_block() -> dict[str, Any]:
    section = PAGE.read_text().split("## Adding any OpenID Connect provider", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None, "docs/providers.md lost its configuration block"
    parsed: dict[str, Any] = yaml.safe_load(block.group(1))
    return parsed


@pytest.fixture
async def gitlab_idp(idp_clock: SettableClock) -> AsyncIterator[FakeIdP]:  # noqa: F811
    async with FakeIdP(clock=idp_clock, providers={"gitlab": Shape.OIDC}) as fake:
        yield fake


def test_the_page_configures_a_provider_with_four_keys() -> None:
    block = _documented_block()
    assert set(block["providers"]) == {"gitlab"}
    assert set(block["providers"]["gitlab"]) == {"issuer", "client_id", "client_secret", "scopes"}
    assert [urlpath(u) for u in block["app"]["callback_urls"]] == ["/v1/auth/gitlab/callback"]


def urlpath(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


async def test_a_provider_configured_as_the_page_says_signs_in(
    make_service: MakeService,  # noqa: F811
    gitlab_idp: FakeIdP,
    idp_clock: SettableClock,  # noqa: F811
) -> None:
    block = _documented_block()
    fake = gitlab_idp["gitlab"]
    values = {
        "issuer": fake.issuer,
        "client_id": fake.client_id,
        "client_secret": fake.client_secret,
        "scopes": block["providers"]["gitlab"]["scopes"],
    }
    assert set(values) == set(block["providers"]["gitlab"])
    callback = f"{APP_URL}/v1/auth/gitlab/callback"
    client = await make_service(
        {"app": {"url": APP_URL, "callback_urls": [callback]}, "providers": {"gitlab": values}},
        clock=idp_clock,
    )
    start = await client.get(
        "/v1/auth/gitlab",
        params={"redirect_uri": callback, "intent": "register"},
        headers={"Accept": "application/json"},
    )
    assert start.status == 200, await start.text()
    details = await start.json()
    binding = start.cookies["__Host-authgate_binding"].value
    back = await gitlab_idp.authorize(details["authorizationUrl"])
    answer = await client.get(
        "/v1/auth/gitlab/callback",
        params=back.params,
        headers={"Cookie": f"__Host-authgate_binding={binding}"},
        allow_redirects=False,
    )
    assert answer.status == 302
    assert "error=" not in answer.headers["Location"], answer.headers["Location"]
    token = answer.cookies["session"].value
    account = await client.get("/v1/account", headers={"Authorization": f"Bearer {token}"})
    assert account.status == 200
    assert [p["provider"] for p in (await account.json())["providers"]] == ["gitlab"]
