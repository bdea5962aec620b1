"""RFC 9207: the ``iss`` parameter of the authorization response, checked by the adapter
against the fake provider on loopback (``check_response_issuer``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from authgate.entrypoints.app.build import open_resources
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from tests.app.conftest import load_config
from tests.fakeidp import FakeIdP
from tests.identity.conftest import MakeAdapter

ISS_FLAG = "authorization_response_iss_parameter_supported"


@pytest.mark.parametrize("provider", ["google", "apple"])
async def test_the_providers_own_issuer_is_accepted(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, provider: str
) -> None:
    fake_idp[provider].discovery_overrides = {ISS_FLAG: True}
    await make_adapter(provider).check_response_issuer(fake_idp[provider].issuer)


@pytest.mark.parametrize(
    "foreign",
    [
        "https://evil.example",
        "{issuer}/",  # not exactly the issuer
        "{other}",  # another configured provider's issuer: the mix-up attack
        "",
    ],
)
async def test_a_foreign_issuer_is_refused(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, foreign: str
) -> None:
    iss = foreign.format(issuer=fake_idp.google.issuer, other=fake_idp.apple.issuer)
    with pytest.raises(VerificationFailed, match="iss"):
        await make_adapter("google").check_response_issuer(iss)


async def test_an_additional_id_token_issuer_is_not_the_response_issuer(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    # RFC 9207 2.4: compared with the issuer identifier of the metadata, nothing else.
    adapter = make_adapter("google", additional_issuers=["accounts.example"])
    with pytest.raises(VerificationFailed):
        await adapter.check_response_issuer("accounts.example")


async def test_a_missing_issuer_is_refused_when_discovery_advertises_it(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.google.discovery_overrides = {ISS_FLAG: True}
    with pytest.raises(VerificationFailed, match="no iss"):
        await make_adapter("google").check_response_issuer(None)


@pytest.mark.parametrize("flag", [None, False, "true", 1])
async def test_a_missing_issuer_is_accepted_without_the_discovery_flag(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, flag: object
) -> None:
    if flag is not None:  # only the JSON value true advertises the parameter
        fake_idp.google.discovery_overrides = {ISS_FLAG: flag}
    await make_adapter("google").check_response_issuer(None)
    assert fake_idp.google.hits["openid-configuration"] == 1


async def test_a_missing_issuer_is_refused_when_the_setting_requires_it(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    adapter = make_adapter("google", require_response_iss=True)
    with pytest.raises(VerificationFailed, match="no iss"):
        await adapter.check_response_issuer(None)
    await adapter.check_response_issuer(fake_idp.google.issuer)


async def test_an_issuer_less_provider_accepts_no_iss_at_all(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    adapter = make_adapter("facebook")
    await adapter.check_response_issuer(None)
    for iss in (fake_idp.google.issuer, fake_idp.facebook.issuer, "https://www.facebook.com"):
        with pytest.raises(VerificationFailed, match="iss"):
            await adapter.check_response_issuer(iss)


async def test_explicit_endpoints_need_no_discovery_for_the_check(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    g = fake_idp.google
    adapter = make_adapter(
        "google",
        authorization_endpoint=g.authorization_endpoint,
        token_endpoint=g.token_endpoint,
        jwks_uri=g.jwks_uri,
    )
    await adapter.check_response_issuer(None)
    await adapter.check_response_issuer(g.issuer)
    with pytest.raises(VerificationFailed):
        await adapter.check_response_issuer("https://evil.example")
    assert g.hits["openid-configuration"] == 0


async def test_discovery_down_is_an_exchange_failure_not_a_verdict(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.google.discovery_down = True
    adapter = make_adapter("google")
    with pytest.raises(ExchangeFailed, match="discovery"):
        await adapter.check_response_issuer(None)
    # a foreign iss is refused without asking the provider anything
    with pytest.raises(VerificationFailed):
        await adapter.check_response_issuer("https://evil.example")


async def test_the_yaml_setting_reaches_the_adapter(tmp_path: Path, fake_idp: FakeIdP) -> None:
    google = {**fake_idp.config("google"), "require_response_iss": True}
    config = load_config(tmp_path, {"providers": {"google": google}})
    resources = await open_resources(config)
    try:
        adapter = resources.providers["google"]
        with pytest.raises(VerificationFailed, match="no iss"):
            await adapter.check_response_issuer(None)
        await adapter.check_response_issuer(fake_idp.google.issuer)
    finally:
        await resources.close()
