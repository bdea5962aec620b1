"""A command whose reader goes away (``authgate openapi | head``) ends quietly, as other
command-line tools do: by SIGPIPE (status 141 in a shell), with nothing on standard error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from authgate.adapters.jose.keys import load_or_create_keys
from tests.app.conftest import base_config, merge


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "authgate.yaml"
    database = {"url": f"sqlite:///{tmp_path / 'authgate.db'}"}
    path.write_text(yaml.safe_dump(merge(base_config(tmp_path), {"database": database})))
    return path


def into_a_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``authgate ARGS`` with standard output a pipe whose reader has already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "authgate.entrypoints.cli", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
            cwd=cwd,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "command",
    [
        ["openapi"],
        ["config", "check"],
        ["migrate"],
        ["keys", "rotate"],
        ["keys", "prune"],
    ],
    ids=lambda command: " ".join(command),
)
def test_a_closed_output_ends_the_command_quietly(tmp_path: Path, command: list[str]) -> None:
    config = write_config(tmp_path)
    if command[0] == "keys":
        load_or_create_keys(tmp_path / "keys.json", create=True)  # a key file to act on
    result = into_a_closed_pipe(*command, "--config", str(config), cwd=tmp_path)
    assert result.stderr == ""
    assert result.returncode == -signal.SIGPIPE
