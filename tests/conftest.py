"""Fixtures shared by every test folder (plugins under tests/support)."""

pytest_plugins = ["tests.support.redis_server", "tests.support.postgres"]
