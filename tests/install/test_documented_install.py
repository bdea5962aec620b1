"""docs/operations.md's install commands work as written, with only what they name: Python
3.11's own pip and venv. The block is read from the document and run line by line (the install
folder and the wheel folder moved into a temporary directory), from a clean copy of the source,
so a command that needs a tool a fresh machine lacks, or a path that changed, fails here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .test_wheel import LEFTOVERS, ROOT, _env

pytestmark = pytest.mark.slow  # pip installs the whole runtime lock: a minute or two

DOC = ROOT / "docs" / "operations.md"


def documented_install() -> list[str]:
    """The commands of the first ``sh`` block of "Installing the package"."""
    section = DOC.read_text().split("## Installing the package", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "docs/operations.md lost its install commands"
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def test_the_documented_install_commands_work_as_written(tmp_path: Path) -> None:
    commands = documented_install()
    # what a person types: python3.11 and the environment's own pip, nothing else installed
    assert all(
        c.split()[0] in ("python3.11", "/opt/authgate/bin/pip")
        or c.startswith("/opt/authgate/bin/")
        for c in commands
    ), commands
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*LEFTOVERS))
    target = tmp_path / "opt-authgate"
    env = _env()
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    for command in commands:
        line = command.replace("/opt/authgate", str(target))
        if shutil.which("python3.11") is None:
            line = re.sub(r"^python3\.11\b", "python3", line)
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    openapi = subprocess.run(
        [
            str(target / "bin" / "authgate"),
            "openapi",
            "--config",
            str(ROOT / "config.default.yaml"),
        ],
        cwd=tmp_path,
        env={**env, "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert openapi.returncode == 0, openapi.stderr
    assert '"openapi": "3.0.3"' in openapi.stdout
