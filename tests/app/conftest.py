"""The whole service, built by its composition root from a YAML configuration, on loopback."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints import composition
from authgate.entrypoints.config import Config, parse
from authgate.entrypoints.server import build_app

APP_URL = "https://app.example.com"

Client = TestClient[web.Request, web.Application]
MakeService = Callable[..., Awaitable[Client]]


def base_config(tmp_path: Path) -> dict[str, Any]:
    return {
        "environment": "test",
        "rest": {"port": 8080},
        "otel": {"service": {"name": "authgate-test"}, "sdk": {"disabled": True}},
        "app": {"url": APP_URL, "callback_urls": []},
        "database": {"url": "memory://"},
        "session": {"keys_file": str(tmp_path / "keys.json"), "generate_keys": True},
        "ratelimit": {"storage": "memory://"},
        "providers": {},
    }


def merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "providers":
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(tmp_path: Path, overrides: dict[str, Any]) -> Config:
    return parse(yaml.safe_dump(merge(base_config(tmp_path), overrides)))


@pytest.fixture
def make_service(aiohttp_client: Any, tmp_path: Path) -> MakeService:
    """``await make_service({...overrides})``: a client of the whole service."""

    async def start(overrides: dict[str, Any] | None = None) -> Client:
        config = load_config(tmp_path, overrides or {})
        app = await composition.create_app(config, build_app)
        client: Client = await aiohttp_client(app)
        return client

    return start
