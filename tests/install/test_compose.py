"""compose.yaml, read as the engine reads it: the services it promises, wired in order, and the
configuration it mounts valid with the environment it gives. (Starting it needs the postgres and
redis images from a registry; test_container.py runs the authgate image itself.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from authgate.entrypoints.app.config import load

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    found: dict[str, Any] = compose["services"]
    return found


def _compose_default(value: str) -> str:
    """Compose's ``${VAR:-default}`` with VAR unset."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def test_services_and_their_order(services: dict[str, Any]) -> None:
    assert set(services) == {"postgres", "redis", "migrate", "authgate"}
    migrate, authgate = services["migrate"], services["authgate"]
    assert migrate["command"][0] == "migrate" and migrate["restart"] == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert authgate["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert authgate["depends_on"]["redis"]["condition"] == "service_healthy"
    assert authgate["image"] == migrate["image"]
    assert "readiness" in authgate["healthcheck"]["test"]
    assert authgate["build"]["dockerfile"] == "Containerfile"


def test_the_mounted_configuration_loads_with_the_compose_environment(
    services: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    authgate = services["authgate"]
    [mount] = [v for v in authgate["volumes"] if v.endswith(":/etc/authgate/authgate.yaml:ro")]
    for name, value in authgate["environment"].items():
        monkeypatch.setenv(name, _compose_default(value))
    config = load(str(ROOT / mount.split(":")[0]))
    assert config.database.url == "postgresql://authgate:authgate@postgres:5432/authgate"
    assert config.ratelimit.storage == "redis://redis:6379/0"
    assert (config.rest.host, config.rest.port) == ("0.0.0.0", 8080)
    # Published on the same port: the development provider's issuer is one address for all.
    assert "127.0.0.1:8080:8080" in authgate["ports"]
    assert config.providers["google"].issuer == "http://127.0.0.1:8080/dev/idp"
