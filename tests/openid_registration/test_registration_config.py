"""``registration:``: off by default; what a registrant may ask for is checked at start-up,
each mistake one line naming the key; with registration on, authgate is an OpenID Provider
even without configured clients (production then needs its https issuer)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from openapi_spec_validator import validate

from authgate.entrypoints.app import build
from authgate.entrypoints.app.config import ConfigError, parse, provider_on

BASE: dict[str, Any] = {
    "rest": {"port": 8080},
    "otel": {"service": {"name": "t"}, "sdk": {"disabled": True}},
    "environment": "development",
}


def config_with(registration: dict[str, Any], **extra: Any) -> Any:
    return parse(yaml.safe_dump({**BASE, "registration": registration, **extra}))


def test_registration_is_off_by_default_and_asks_for_initial_access_tokens() -> None:
    config = parse(yaml.safe_dump(BASE))
    assert config.registration.enabled is False
    assert config.registration.policy == "initial_access_token"
    assert sorted(config.registration.grant_types) == ["authorization_code", "refresh_token"]
    assert config.ratelimit.registration == "20/hour"
    assert not provider_on(config)
    assert provider_on(config_with({"enabled": True}))


@pytest.mark.parametrize(
    ("registration", "message"),
    [
        ({"policy": "anyone"}, "registration.policy: must be one of initial_access_token, open"),
        ({"grant_types": ["password"]}, "registration.grant_types: 'password' is not a grant"),
        ({"grant_types": ["refresh_token"]}, "registration.grant_types: needs authorization_code"),
        (
            {"grant_types": ["client_credentials"], "confidential_clients": False},
            "registration.grant_types: client_credentials is for confidential clients",
        ),
        (
            {"scopes": ["openid", "tools read"]},
            "registration.scopes: 'tools read' is not a scope token",
        ),
        ({"scopes": []}, "registration.scopes: at least one scope"),
        ({"resources": ["https://api.example.com#x"]}, "registration.resources: "),
        ({"initial_token_seconds": 5}, "registration.initial_token_seconds: must be between"),
        ({"enable": True}, "registration.enable: unknown key"),
    ],
)
def test_mistakes_are_one_line_naming_the_key(registration: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config_with(registration)
    assert str(raised.value).startswith(message), raised.value


def test_production_registration_needs_the_https_issuer() -> None:
    with pytest.raises(ConfigError, match=r"rest\.public_url, an https URL"):
        config_with({"enabled": True}, environment="production")
    config = config_with(
        {"enabled": True},
        environment="production",
        rest={"port": 8080, "public_url": "https://auth.example.com"},
    )
    assert config.registration.enabled


def test_the_rate_limit_of_registrations_is_checked_like_the_others() -> None:
    with pytest.raises(ConfigError, match=r"ratelimit\.registration"):
        parse(yaml.safe_dump({**BASE, "ratelimit": {"registration": "lots"}}))


def test_the_openapi_document_describes_the_registration_endpoints() -> None:
    config = config_with({"enabled": True})
    document = build.document(config)
    validate(document)
    paths = document["paths"]
    assert set(paths["/oauth2/register"]) == {"post"}
    assert set(paths["/oauth2/register/{client_id}"]) == {"get", "put", "delete"}
    register = paths["/oauth2/register"]["post"]
    assert "201" in register["responses"] and "401" in register["responses"]
    off = build.document(parse(yaml.safe_dump(BASE)))
    assert "/oauth2/register" not in off["paths"]
