"""The composition root: the only module that knows every concrete adapter."""

from __future__ import annotations

from importlib.metadata import version

from aiohttp import web

from authgate.entrypoints.config import Config
from authgate.entrypoints.rest import Api

TITLE = "authgate"


class StartupError(Exception):
    """The service cannot start as configured; the text is one line for stderr."""


def build_api(config: Config) -> Api:
    """The API with every operation of the service registered."""
    return Api(TITLE, version("authgate"), max_body_bytes=config.rest.max_body_bytes)


def attach(app: web.Application, config: Config) -> None:
    """Open and close the adapters' resources with the application."""


def migrate(config: Config) -> int:
    raise StartupError("migrate: no database adapter is configured yet")
