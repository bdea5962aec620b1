"""Smaller hardening: no Server header, the demo and the development provider only
in development, and a warning when login-CSRF protection is switched off."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

from authgate.entrypoints.app.config import ConfigError
from authgate.entrypoints.demo.docs import SWAGGER_FILES

from .conftest import MakeService, load_config
from .test_serve_access_log import serving


async def test_no_response_names_the_server_software(make_service: MakeService) -> None:
    client = await make_service({"environment": "development"})
    for path, status in [
        ("/health/liveness", 200),
        ("/openapi.json", 200),
        ("/nowhere", 404),
        (f"/docs/assets/{SWAGGER_FILES[0]}", 200),  # a file response
        ("/demo", 200),
        ("/", 302),
        ("/v1/auth/google", 400),  # an operation's own error (no redirect_uri)
    ]:
        response = await client.get(path, allow_redirects=False)
        assert response.status == status, path
        assert "Server" not in response.headers, path
    response = await client.post("/health/liveness")
    assert response.status == 405
    assert "Server" not in response.headers


async def test_environment_test_serves_no_demo(make_service: MakeService) -> None:
    client = await make_service({"environment": "test"})
    for path in ("/demo", "/demo/login", "/", "/dev/idp/.well-known/openid-configuration"):
        assert (await client.get(path, allow_redirects=False)).status == 404, path
    assert (await client.get("/docs")).status == 200


async def test_environment_development_serves_the_demo(make_service: MakeService) -> None:
    client = await make_service({"environment": "development"})
    assert (await client.get("/demo")).status == 200


@pytest.mark.parametrize("environment", ["test", "production"])
def test_the_development_provider_needs_environment_development(
    tmp_path: Path, environment: str
) -> None:
    with pytest.raises(ConfigError, match=r"^dev\.identity_provider: "):
        load_config(tmp_path, {"environment": environment, "dev": {"identity_provider": True}})


async def test_switching_off_the_binding_cookie_warns_at_start(
    make_service: MakeService, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="authgate"):
        await make_service({"state": {"require_binding_cookie": False}})
    (line,) = [r.getMessage() for r in caplog.records if "require_binding_cookie" in r.getMessage()]
    assert "login-CSRF protection is off" in line
    assert [r.levelname for r in caplog.records if "require_binding_cookie" in r.getMessage()] == [
        "WARNING"
    ]


async def test_the_binding_cookie_on_starts_without_the_warning(
    make_service: MakeService, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="authgate"):
        await make_service()
    assert not [r for r in caplog.records if "require_binding_cookie" in r.getMessage()]


def test_the_served_process_sends_no_server_header(tmp_path: Path) -> None:
    with (
        serving(tmp_path, {}) as (port, _),
        socket.create_connection(("127.0.0.1", port), timeout=5) as s,
    ):
        s.sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 404 ")
    assert b"\r\nserver:" not in head
