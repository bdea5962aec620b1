"""An application that configures logging itself gets the service's lines through its own
handler, in the order they happened: a sign-in's access lines and its audit line between them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.fakeidp import FakeUser
from tests.support.waiting import eventually

from .conftest import SignIn


class Collecting(logging.Handler):
    """The application's own handler: keeps every record it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def configured() -> Iterator[Collecting]:
    """A handler on the root logger, at INFO, as an application's logging configuration."""
    root = logging.getLogger()
    handler = Collecting()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def test_a_sign_ins_lines_reach_the_configured_handler_in_order(
    signin: SignIn, configured: Collecting
) -> None:
    done = await signin.complete("google", user=FakeUser(sub="in-order"), intent="register")
    assert done.status == 302, done.headers

    def lines() -> list[tuple[str, str]]:
        return [
            (r.name, r.getMessage())
            for r in configured.records
            if r.name in ("authgate.access", "authgate.audit")
        ]

    await eventually(  # the callback's access line is logged once its answer is out
        lambda: any("/callback " in message for _, message in lines()),
        what="the callback's access line",
    )
    (initiation, audit, callback) = lines()
    assert initiation[0] == "authgate.access"
    assert " GET /v1/auth/google 200 " in initiation[1]
    assert audit[0] == "authgate.audit"
    assert audit[1].startswith("sign-in event: provider=google outcome=registered ")
    assert callback[0] == "authgate.access"
    assert " GET /v1/auth/google/callback 302 " in callback[1]
