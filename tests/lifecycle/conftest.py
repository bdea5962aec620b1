"""Fixtures: the service with its development identity provider on a real loopback port."""

from tests.devidp.fixtures import make_dev_service, service  # noqa: F401
