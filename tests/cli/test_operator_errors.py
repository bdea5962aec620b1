"""What the operator reads when a command refuses: ``config check`` refuses what ``serve``
refuses, names every unset variable at once and says how to make a missing key file; every
command finds its configuration in ``$AUTHGATE_CONFIG``; ``--version``."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from authgate import __version__

ROOT = Path(__file__).resolve().parents[2]


def authgate(
    *args: str, cwd: Path, env: dict[str, str] | None = None, unset: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in unset and k != "AUTHGATE_CONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "authgate.entrypoints.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**environ, **(env or {})},
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def default_config(tmp_path: Path, change: dict[str, object] | None = None) -> Path:
    """The embedded default (``scripts/run``'s), with ``change`` applied to its sections."""
    data = yaml.safe_load((ROOT / "config.default.yaml").read_text())
    for dotted, value in (change or {}).items():
        *parents, last = dotted.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    path = tmp_path / "authgate.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def ports() -> dict[str, str]:
    return {"PORT": str(free_port()), "METRICS_PORT": str(free_port())}


def test_config_check_refuses_two_development_providers_with_one_client_id(
    tmp_path: Path,
) -> None:
    """``serve`` refuses it before it listens; the check said ``ok`` to it."""
    path = default_config(tmp_path, {"providers.facebook.client_id": "authgate-dev-google"})
    expected = (
        "authgate: providers.facebook.client_id: another development provider client uses "
        "'authgate-dev-google'"
    )
    env = ports()
    check = authgate("config", "check", "--config", str(path), cwd=tmp_path, env=env)
    serve = authgate("serve", "--config", str(path), cwd=tmp_path, env=env)
    for result in (check, serve):
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.strip().splitlines()[-1] == expected
    assert check.stdout == ""  # not "config: ok"
    assert not (tmp_path / "var").exists()  # refused before anything was made


def test_config_check_refuses_a_provider_setting_as_serve_does(tmp_path: Path) -> None:
    """A provider's YAML is read straight into the adapter's settings, which refuse it as
    the configuration is read: the check and ``serve`` alike, before anything is made (the
    development Apple key file included)."""
    path = default_config(tmp_path, {"providers.facebook.id_token_algorithms": ["HS256"]})
    env = ports()
    refusal = "providers.facebook: provider 'facebook': id_token_algorithms: 'HS256' is not allowed"
    check = authgate("config", "check", "--config", str(path), cwd=tmp_path, env=env)
    serve = authgate("serve", "--config", str(path), cwd=tmp_path, env=env)
    for result in (check, serve):
        assert result.returncode == 2, result.stdout + result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(f"authgate: configuration error in {path}: {refusal}")
    assert check.stdout == ""  # not "config: ok"
    assert not (tmp_path / "var").exists()  # refused before anything was made


def test_config_check_refuses_a_revocation_channel_without_its_store(tmp_path: Path) -> None:
    path = default_config(tmp_path, {"session.revocation_channel": "postgres"})
    result = authgate("config", "check", "--config", str(path), cwd=tmp_path, env=ports())
    assert result.returncode == 2
    assert result.stderr == (
        "authgate: session.revocation_channel: postgres needs a PostgreSQL database.url\n"
    )


EXAMPLE_VARIABLES = (
    "GOOGLE_CLIENT_ID",
    "GOOGLE_CLIENT_SECRET",
    "FACEBOOK_CLIENT_ID",
    "FACEBOOK_CLIENT_SECRET",
    "APPLE_SERVICES_ID",
    "APPLE_TEAM_ID",
    "APPLE_KEY_ID",
    "APPLE_PRIVATE_KEY_FILE",
    "AUTHGATE_PROVIDER_TOKEN_KEY",
    "SHOP_CLIENT_SECRET",
)


def test_every_unset_variable_is_named_in_one_run(tmp_path: Path) -> None:
    example = ROOT / "config.example.yaml"
    result = authgate(
        "config", "check", "--config", str(example), cwd=tmp_path, unset=EXAMPLE_VARIABLES
    )
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(
        f"authgate: configuration error in {example}: environment variables not set: "
    )
    named = re.findall(r"([A-Z_]+) \(line (\d+)\)", line)
    assert [name for name, _ in named] == list(EXAMPLE_VARIABLES)
    lines = example.read_text().splitlines()
    for name, number in named:
        assert "${" + name + "}" in lines[int(number) - 1]


def test_a_missing_session_key_file_says_how_to_make_one(tmp_path: Path) -> None:
    path = default_config(tmp_path, {"session.generate_keys": False})
    env = ports()
    check = authgate("config", "check", "--config", str(path), cwd=tmp_path, env=env)
    assert check.returncode == 1
    [line] = [x for x in check.stdout.splitlines() if x.startswith("session keys:")]
    assert line == (
        "session keys: FAILED session key file ./var/session-keys.json does not exist (set "
        "session.generate_keys: true to create one on first start)"
    )
    serve = authgate("serve", "--config", str(path), cwd=tmp_path, env=env)
    assert serve.returncode == 2
    assert serve.stderr.splitlines()[-1] == (
        "authgate: session key file var/session-keys.json does not exist (set "
        "session.generate_keys: true to create one on first start)"
    )


def test_every_command_reads_authgate_config_without_config(tmp_path: Path) -> None:
    path = default_config(tmp_path)
    env = {**ports(), "AUTHGATE_CONFIG": str(path)}
    commands = (
        ("openapi",),
        ("config", "check"),
        ("keys", "rotate"),
        ("keys", "prune"),
        ("provider-tokens", "rekey"),
        ("accounts", "show", "nobody@example.com"),
        ("sessions", "revoke", "--account", "nobody@example.com"),
        ("migrate",),
    )
    for command in commands:
        result = authgate(*command, cwd=tmp_path, env=env)
        assert "--config" not in result.stderr, (command, result.stderr)
        assert "configuration error" not in result.stderr, (command, result.stderr)
    # keys rotate wrote the file the variable's configuration names
    assert (tmp_path / "var" / "session-keys.json").exists()
    # --config still wins over the variable
    other = tmp_path / "other.yaml"
    result = authgate("openapi", "--config", str(other), cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert f"configuration error in {other}:" in result.stderr
    # and without either, the command says what it needs
    result = authgate("openapi", cwd=tmp_path)
    assert result.returncode == 2
    assert "--config" in result.stderr


def test_version(tmp_path: Path) -> None:
    result = authgate("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == f"authgate {__version__}\n"


def held_port() -> socket.socket:
    """A port another process listens on."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder


def test_a_taken_port_is_said_first_and_names_the_variable_to_change(tmp_path: Path) -> None:
    """The default configuration reads rest.port and metrics.port from PORT and METRICS_PORT:
    those are what the operator changes. Nothing was made, and no line said where the service
    would be before the refusal."""
    path = default_config(tmp_path)
    with held_port() as holder:
        taken = holder.getsockname()[1]
        for setting, variable, other, also in (
            ("rest.port", "PORT", "METRICS_PORT", ""),
            ("metrics.port", "METRICS_PORT", "PORT", ", or metrics.enabled: false"),
        ):
            env = {variable: str(taken), other: str(free_port())}
            result = authgate("serve", "--config", str(path), cwd=tmp_path, env=env)
            assert result.returncode == 2
            assert result.stderr == (
                f"authgate: {setting}: cannot listen on 127.0.0.1:{taken}: Address already in "
                f"use (set {variable}, which {setting} is read from, to another port{also})\n"
            )
    assert not (tmp_path / "var").exists()


def test_a_taken_port_written_out_names_the_setting(tmp_path: Path) -> None:
    with held_port() as holder:
        taken = holder.getsockname()[1]
        path = default_config(tmp_path, {"rest.port": taken, "metrics.port": free_port()})
        result = authgate("serve", "--config", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        f"authgate: rest.port: cannot listen on 127.0.0.1:{taken}: Address already in use "
        "(choose another rest.port)\n"
    )


def test_the_start_up_log_names_the_metrics_listener(tmp_path: Path) -> None:
    path = default_config(tmp_path)
    env = ports()
    environ = {k: v for k, v in os.environ.items() if k != "AUTHGATE_CONFIG"}
    process = subprocess.Popen(
        [sys.executable, "-m", "authgate.entrypoints.cli", "serve", "--config", str(path)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env={**environ, **env},
    )
    assert process.stderr is not None
    lines = []
    try:
        for line in process.stderr:
            lines.append(line)
            if " listening on " in line:
                break
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert any(
        line.rstrip().endswith(f" metrics at http://127.0.0.1:{env['METRICS_PORT']}/metrics")
        for line in lines
    ), lines
