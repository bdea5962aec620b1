"""Adapter-specific storage tests: migrations, the SQLite file, PostgreSQL connection loss."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # The PostgreSQL fixtures, unless tests/conftest.py already lists them in pytest_plugins.
    if not config.pluginmanager.has_plugin("tests.support.postgres"):
        config.pluginmanager.import_plugin("tests.support.postgres")
