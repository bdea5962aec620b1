"""The fake identity provider's fixtures, for suites that run real ``authgate serve`` processes."""

from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401
