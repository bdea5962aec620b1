"""The service as an OpenID Provider with the fake identity provider's three providers behind
it, on memory (``op``) or on each store (``op_on``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.app.conftest import (
    APP_URL,
    CALLBACK_URL,
    PROVIDERS,
    MakeService,
    make_service,  # noqa: F401
)
from tests.fakeidp import FakeIdP, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
from tests.support.stores import service_database_url

from .harness import CLIENTS, ISSUER, Op

STORES = ("memory", "sqlite", "postgres")


def op_config(fake: FakeIdP, database_url: str = "memory://", **extra: Any) -> dict[str, Any]:
    return {
        "rest": {"port": 8080, "public_url": ISSUER},
        "app": {"url": APP_URL, "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS]},
        "providers": {p: fake.config(p) for p in PROVIDERS},
        "database": {"url": database_url},
        "clients": CLIENTS,
        **extra,
    }


@pytest.fixture
async def op(make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock) -> Op:  # noqa: F811
    """The provider on memory."""
    client = await make_service(op_config(fake_idp), clock=idp_clock)
    return Op(client, fake_idp, idp_clock)


@pytest.fixture(params=STORES)
async def op_on(
    request: pytest.FixtureRequest,
    make_service: MakeService,  # noqa: F811
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
    tmp_path: Path,
) -> Op:
    """The provider on memory, SQLite and PostgreSQL."""
    url = service_database_url(request, request.param, tmp_path)
    client = await make_service(op_config(fake_idp, url), clock=idp_clock)
    return Op(client, fake_idp, idp_clock)
