"""Provider outages and misbehaviour: discovery failures are ProviderUnavailable, token
endpoint failures are ExchangeFailed in bounded time, and no failure text or log line carries
a code, a token or a secret."""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp
import pytest

from authgate.adapters.provider import OAuthIdentityProvider, ProviderSettingsError
from authgate.domain.errors import ProviderUnavailable
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from tests.fakeidp import FakeIdP, SettableClock, Tamper, TokenMode
from tests.identity.conftest import MakeAdapter, sign_in, start
from tests.support.ports import free_port

# -- discovery -------------------------------------------------------------------------------


async def authorization_url(adapter: OAuthIdentityProvider) -> str:
    return await adapter.authorization_url(
        state="s", redirect_uri="http://127.0.0.1/cb", code_challenge=None, nonce="n"
    )


async def test_discovery_down_is_provider_unavailable_and_retried(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    fake_idp.google.discovery_down = True
    with pytest.raises(ProviderUnavailable, match="discovery answered HTTP 500"):
        await authorization_url(adapter)
    fake_idp.google.discovery_down = False
    with pytest.raises(ProviderUnavailable, match="failed recently"):
        await authorization_url(adapter)  # within the retry interval: no new request
    assert fake_idp.google.hits["openid-configuration"] == 1
    idp_clock.advance(5)
    assert (await authorization_url(adapter)).startswith(fake_idp.google.authorization_endpoint)
    await authorization_url(adapter)
    assert fake_idp.google.hits["openid-configuration"] == 2


async def test_discovery_is_single_flight(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    adapter = make_adapter("apple")
    urls = await asyncio.gather(*(authorization_url(adapter) for _ in range(10)))
    assert len(set(urls)) == 1
    assert fake_idp.apple.hits["openid-configuration"] == 1


async def test_discovery_refreshed_daily_keeping_the_last_good_document(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    await authorization_url(adapter)
    fake_idp.google.discovery_down = True
    idp_clock.advance(86401)
    assert await authorization_url(adapter)  # the old document serves
    assert fake_idp.google.hits["openid-configuration"] == 2


@pytest.mark.parametrize(
    "override",
    [
        {"issuer": "https://evil.example"},
        {"token_endpoint": "not a url"},
        {"authorization_endpoint": None},
        {"jwks_uri": 42},
    ],
)
async def test_unusable_discovery_document(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, override: dict[str, object]
) -> None:
    fake_idp.google.discovery_overrides = override
    with pytest.raises(ProviderUnavailable):
        await authorization_url(make_adapter("google"))


async def test_discovery_failure_at_the_callback_is_an_exchange_failure(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    started = await start(make_adapter("google"), fake_idp)
    fake_idp.google.discovery_down = True
    other_instance = make_adapter("google")  # has not loaded discovery yet
    with pytest.raises(ExchangeFailed, match="discovery"):
        await other_instance.exchange(
            code=started.callback.code or "",
            redirect_uri=started.redirect_uri,
            code_verifier=started.verifier,
            nonce=started.nonce,
        )


async def test_unreachable_issuer_is_provider_unavailable(
    http_session: aiohttp.ClientSession, idp_clock: SettableClock, fake_idp: FakeIdP
) -> None:
    port = free_port()
    settings = fake_idp.settings("google", issuer=f"http://127.0.0.1:{port}/google")
    adapter = OAuthIdentityProvider(settings, http_session, idp_clock)
    with pytest.raises(ProviderUnavailable, match="could not be reached"):
        await authorization_url(adapter)


# -- the token endpoint ------------------------------------------------------------------------


TOKEN_MISBEHAVIOUR = [
    (TokenMode.DOWN, "answered HTTP 500"),
    (TokenMode.GARBAGE, "not a JSON object"),
    (TokenMode.ERROR_ECHO, r"HTTP 400 \(error=invalid_grant\)$"),
    (TokenMode.NO_ACCESS_TOKEN, "no access_token"),
    (TokenMode.NO_ID_TOKEN, "no id_token"),
    (TokenMode.NOT_BEARER, "not bearer"),
]


@pytest.mark.parametrize(
    ("provider", "mode", "message"),
    [
        (provider, mode, message)
        for provider in ("google", "facebook", "apple")
        for mode, message in TOKEN_MISBEHAVIOUR
        if not (provider == "facebook" and mode is TokenMode.NO_ID_TOKEN)  # none expected
    ],
)
async def test_token_endpoint_misbehaviour_is_an_exchange_failure(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, mode: TokenMode, message: str, provider: str
) -> None:
    fake_idp[provider].token_mode = mode
    with pytest.raises(ExchangeFailed, match=message):
        await sign_in(make_adapter(provider), fake_idp)


async def test_slow_token_endpoint_fails_in_bounded_time(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    fake_idp.google.token_mode = TokenMode.SLOW
    adapter = make_adapter("google", timeout_seconds=0.3)
    began = time.monotonic()
    with pytest.raises(ExchangeFailed, match=r"did not answer within 0\.3 s"):
        await sign_in(adapter, fake_idp)
    # The time is the behaviour: the fake holds the answer for ``slow_seconds`` (30 s), so
    # anything well below that proves the 0.3 s timeout cut it off; 10 s leaves a loaded
    # machine plenty of room.
    assert time.monotonic() - began < fake_idp.google.slow_seconds / 3


async def test_unreachable_token_endpoint(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    adapter = make_adapter(
        "facebook", token_endpoint=f"http://127.0.0.1:{free_port()}/facebook/token"
    )
    with pytest.raises(ExchangeFailed, match="could not be reached"):
        await sign_in(adapter, fake_idp)


async def test_oversized_answer(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    adapter = make_adapter("facebook", max_response_bytes=64)
    with pytest.raises(ExchangeFailed, match="more than 64 bytes"):
        await sign_in(adapter, fake_idp)


# -- nothing secret in failure texts or logs ---------------------------------------------------


async def test_no_code_token_or_secret_in_failures_or_logs(
    make_adapter: MakeAdapter,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    failures: list[BaseException] = []
    scenarios = [
        ("google", "token_mode", TokenMode.ERROR_ECHO),
        ("google", "token_mode", TokenMode.DOWN),
        ("google", "token_mode", TokenMode.GARBAGE),
        ("apple", "token_mode", TokenMode.ERROR_ECHO),
        ("facebook", "token_mode", TokenMode.ERROR_ECHO),
        ("facebook", "profile_down", True),
        ("facebook", "proof_secret", "another"),
        ("google", "tamper", Tamper.TAMPERED_SIGNATURE),
        ("google", "tamper", Tamper.WRONG_NONCE),
        ("apple", "tamper", Tamper.UNKNOWN_KID),
        ("google", "jwks_down", True),
    ]
    for provider, knob, value in scenarios:
        idp_clock.advance(120)
        default = getattr(fake_idp[provider], knob)
        setattr(fake_idp[provider], knob, value)
        try:
            await sign_in(make_adapter(provider), fake_idp)
        except (ExchangeFailed, VerificationFailed) as e:
            failures.append(e)
        else:
            pytest.fail(f"{provider} {knob}={value} did not fail")
        setattr(fake_idp[provider], knob, default)
    secrets_seen: set[str] = set()
    for p in fake_idp.providers.values():
        secrets_seen.add(p.client_secret)
        secrets_seen.update(p.codes)
        secrets_seen.update(p.access_tokens)
        secrets_seen.update(r.form.get("client_secret", "") for r in p.requests_to("token"))
    secrets_seen.discard("")
    texts = [str(e) for e in failures] + [r.getMessage() for r in caplog.records]
    assert len(failures) == len(scenarios)
    assert any(r.name == "authgate.identity" for r in caplog.records)  # not vacuous
    for text in texts:
        assert "eyJ" not in text, text  # no JWT (ID token, Apple client secret)
        for secret in secrets_seen:
            assert secret not in text, text
    assert all(e.__cause__ is None for e in failures)


async def test_settings_hide_secrets_in_repr(fake_idp: FakeIdP) -> None:
    apple = fake_idp.settings("apple")
    google = fake_idp.settings("google")
    assert "PRIVATE KEY" not in repr(apple)
    assert fake_idp.google.client_secret not in repr(google)


# -- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "overrides", "problem"),
    [
        ("google", {"client_secret": None}, "client_secret: required"),
        ("google", {"token_endpoint_auth": "private_key_jwt"}, "token_endpoint_auth"),
        ("google", {"issuer": None}, "needs issuer"),
        ("facebook", {"profile_endpoint": None}, "profile_endpoint or userinfo_endpoint"),
        ("apple", {"team_id": None}, "team_id: required"),
        ("apple", {"private_key_pem": "not a key"}, "private key"),
        ("apple", {"response_mode": "fragment"}, "response_mode"),
        ("google", {"timeout_seconds": 0}, "timeout_seconds"),
        ("google", {"id_token_algorithms": []}, "must not be empty"),
    ],
)
def test_inconsistent_settings_are_refused(
    fake_idp: FakeIdP,
    http_session: aiohttp.ClientSession,
    idp_clock: SettableClock,
    provider: str,
    overrides: dict[str, object],
    problem: str,
) -> None:
    with pytest.raises(ProviderSettingsError, match=problem):
        OAuthIdentityProvider(fake_idp.settings(provider, **overrides), http_session, idp_clock)


def test_apple_key_must_be_p256(
    fake_idp: FakeIdP, http_session: aiohttp.ClientSession, idp_clock: SettableClock
) -> None:
    from joserfc.jwk import ECKey

    p384 = ECKey.generate_key("P-384", private=True).as_pem(private=True).decode()
    with pytest.raises(ProviderSettingsError, match="P-256"):
        OAuthIdentityProvider(
            fake_idp.settings("apple", private_key_pem=p384), http_session, idp_clock
        )


def test_scopes_may_be_given_as_a_list_or_a_string(fake_idp: FakeIdP) -> None:
    assert fake_idp.settings("google", scopes="openid email").scopes == ("openid", "email")
    assert fake_idp.settings("google", scopes=["openid"]).scopes == ("openid",)
