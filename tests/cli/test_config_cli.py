"""Configuration and the CLI: one-line errors with exit status 2, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from authgate.entrypoints.app.config import ConfigError, load, parse
from authgate.entrypoints.cli import main

GOOD = """\
rest:
  port: 8080
otel:
  service:
    name: authgate-test
  sdk:
    disabled: true
"""

# name -> (file contents, or None for "no such file"; the exact stderr line after the prefix)
BAD: dict[str, tuple[bytes | None, str]] = {
    "missing": (None, "cannot read {path}: No such file or directory"),
    "not-utf8": (b"rest:\n  port: \xff\xfe\n", "cannot read {path}: not UTF-8 text"),
    "bad-yaml": (
        b"rest:\n  port: [8080\notel: {}\n",
        "line 3: invalid YAML: expected ',' or ']', but got ':'",
    ),
    "wrong-type": (
        GOOD.replace("port: 8080", "port: eighty").encode(),
        "rest.port: expected an integer, got a string",
    ),
    "wrong-bool": (
        GOOD.replace("disabled: true", "disabled: 1").encode(),
        "otel.sdk.disabled: expected a boolean, got a number",
    ),
    "unknown-key": (
        GOOD.replace("  port: 8080\n", "  port: 8080\n  prot: 1\n").encode(),
        "rest.prot: unknown key",
    ),
    "unknown-section": (
        (GOOD + "databse:\n  url: memory://\n").encode(),
        "databse: unknown key",
    ),
    "missing-key": (
        b"rest:\n  port: 8080\n",
        "otel: required key missing",
    ),
    "unset-variable": (
        GOOD.replace("port: 8080", "port: ${AUTHGATE_TEST_UNSET_PORT}").encode(),
        "line 2: environment variable AUTHGATE_TEST_UNSET_PORT is not set",
    ),
    "port-range": (
        GOOD.replace("port: 8080", "port: 70000").encode(),
        "rest.port: must be between 1 and 65535",
    ),
    "pool-sizes": (
        (GOOD + "database:\n  pool_min_size: 5\n  pool_max_size: 2\n").encode(),
        "database.pool_min_size: must be between 0 and database.pool_max_size",
    ),
    "pool-empty": (
        (GOOD + "database:\n  pool_max_size: 0\n").encode(),
        "database.pool_max_size: must be at least 1",
    ),
    "not-a-mapping": (b"- rest\n", "the file must be a YAML mapping with at least rest and otel"),
    # The provider adapter's tuning keeps its defaults: no configuration key sets it.
    "provider-tuning": (
        (GOOD + "providers:\n  google:\n    client_id: c\n    leeway_seconds: 600\n").encode(),
        "providers.google.leeway_seconds: unknown key",
    ),
}


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "authgate.entrypoints.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def write_bad(folder: Path, name: str) -> Path:
    path = folder / f"{name}.yaml"
    content = BAD[name][0]
    if content is not None:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("name", list(BAD))
def test_bad_configuration_exits_2_with_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    monkeypatch.delenv("AUTHGATE_TEST_UNSET_PORT", raising=False)
    path = write_bad(tmp_path, name)
    for command in ("serve", "openapi"):
        assert main([command, "--config", str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        expected = BAD[name][1].format(path=path)
        assert err == f"authgate: configuration error in {path}: {expected}\n"


def test_bad_configuration_through_the_real_command(tmp_path: Path) -> None:
    """The installed entry point, in processes of its own: status 2, one line, no traceback."""
    names = ("missing", "unknown-key")
    paths = {name: write_bad(tmp_path, name) for name in names}
    procs = {
        name: run_cli("serve" if i % 2 else "openapi", "--config", str(paths[name]))
        for i, name in enumerate(names)
    }
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 2, name
        assert out == ""
        expected = BAD[name][1].format(path=paths[name])
        assert err == f"authgate: configuration error in {paths[name]}: {expected}\n"


def test_unreadable_file_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load(tmp_path)
    assert str(e.value) == f"cannot read {tmp_path}: Is a directory"


def test_default_values_of_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTHGATE_TEST_PORT", raising=False)
    monkeypatch.setenv("AUTHGATE_TEST_NAME", "from-env")
    monkeypatch.setenv("AUTHGATE_TEST_EMPTY", "")
    config = parse(
        GOOD.replace("8080", "${AUTHGATE_TEST_PORT:-9090}")
        .replace("authgate-test", "${AUTHGATE_TEST_NAME:-unused}")
        .replace("disabled: true", "disabled: ${AUTHGATE_TEST_EMPTY:-false}")
    )
    assert config.rest.port == 9090
    assert config.otel.service.name == "from-env"
    assert config.otel.sdk.disabled is False


def test_variables_in_comments_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTHGATE_TEST_UNSET", raising=False)
    text = GOOD + "# providers:\n#   google: {client_id: ${AUTHGATE_TEST_UNSET}}\n"
    text = text.replace("port: 8080", "port: 8080  # or ${AUTHGATE_TEST_UNSET}")
    assert parse(text).rest.port == 8080


def test_openapi_command_prints_the_document(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(GOOD + "environment: development\n")
    proc = run_cli("openapi", "--config", str(config))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    validate(doc)
    assert doc["openapi"] == "3.0.3"
    assert doc["info"]["title"] == "authgate"
    assert {"/openapi.json", "/health/liveness", "/health/readiness"} <= set(doc["paths"])
