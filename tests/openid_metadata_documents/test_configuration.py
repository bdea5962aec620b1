"""``client_metadata_documents``: off by default, and what start-up refuses when it is on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from authgate.entrypoints.app.config import ConfigError, provider_on
from tests.app.conftest import load_config
from tests.openid.harness import CLIENTS, ISSUER


def config(tmp_path: Path, clients: dict[str, Any] | None = CLIENTS, **documents: Any) -> Any:
    overrides: dict[str, Any] = {"rest": {"port": 8080, "public_url": ISSUER}}
    if clients:
        overrides["clients"] = clients
    if documents:
        overrides["client_metadata_documents"] = documents
    return load_config(tmp_path, overrides)


def test_off_by_default(tmp_path: Path) -> None:
    documents = config(tmp_path).client_metadata_documents
    assert documents.enabled is False
    assert documents.max_bytes == 5 * 1024 and documents.timeout_seconds == 3


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        ({"enabled": True}, "enabled needs allowed_hosts"),
        (
            {"enabled": True, "allow_any_host": True, "allowed_hosts": ["a.example"]},
            "allowed_hosts or allow_any_host, not both",
        ),
        ({"enabled": True, "allowed_hosts": ["Tools.Example.net"]}, "is not a lower-case host"),
        ({"enabled": True, "allowed_hosts": ["https://a.example"]}, "is not a lower-case host"),
        ({"enabled": True, "allow_any_host": True, "max_bytes": 10**6}, "max_bytes"),
        ({"enabled": True, "allow_any_host": True, "timeout_seconds": 60}, "timeout_seconds"),
        (
            {
                "enabled": True,
                "allow_any_host": True,
                "min_cache_seconds": 600,
                "max_cache_seconds": 60,
            },
            "max_cache_seconds: must be at least min_cache_seconds",
        ),
    ],
)
def test_start_up_refuses(tmp_path: Path, documents: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=r"^client_metadata_documents") as raised:
        config(tmp_path, **documents)
    assert message in str(raised.value)


def test_turns_the_openid_provider_on_without_configured_clients(tmp_path: Path) -> None:
    """Agents' clients may all be described by documents: no configured client is needed."""
    loaded = config(tmp_path, clients=None, enabled=True, allow_any_host=True)
    assert not loaded.clients
    assert provider_on(loaded)
    assert not provider_on(config(tmp_path, clients=None))


def test_a_valid_section(tmp_path: Path) -> None:
    documents = config(
        tmp_path, enabled=True, allowed_hosts=["tools.example.net"], max_cache_seconds=3600
    ).client_metadata_documents
    assert documents.allowed_hosts == ["tools.example.net"] and documents.max_cache_seconds == 3600
