"""The release number the service reports is the installed distribution's."""

from __future__ import annotations

from importlib.metadata import version

import authgate


def test_version_is_the_distributions() -> None:
    assert authgate.__version__ == version("authgate")
