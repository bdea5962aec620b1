"""Fixtures shared by every test folder (plugins under tests/support), and the `slow` mark."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.support.redis_server", "tests.support.postgres"]

TESTS = Path(__file__).parent

# Folders whose every test is `slow`: they start servers or processes and run for seconds to
# minutes. Marked here by folder, not by a `pytestmark` per module, so a test added to one of
# them cannot be left unmarked. `scripts/test --quick` leaves them out; `scripts/test` (CI) runs
# everything.
SLOW_FOLDERS = ("load", "fuzz", "faults", "scaleout", "browser", "bench", "interop")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks every test under one of ``SLOW_FOLDERS`` as ``slow``."""
    slow = tuple(TESTS / folder for folder in SLOW_FOLDERS)
    for item in items:
        if any(item.path.is_relative_to(folder) for folder in slow):
            item.add_marker(pytest.mark.slow)
