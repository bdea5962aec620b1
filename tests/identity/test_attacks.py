"""Forged or spoiled answers are rejected: every ID-token attack with VerificationFailed,
every code-redemption problem (the fake's token endpoint refuses) with ExchangeFailed."""

from __future__ import annotations

import secrets

import pytest

from authgate.adapters.provider import ProviderSettingsError
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from tests.fakeidp import FakeIdP, SettableClock, Tamper
from tests.identity.conftest import MakeAdapter, sign_in, start

ID_TOKEN_ATTACKS = {
    Tamper.ALG_NONE: "algorithm 'none' is not allowed",
    Tamper.HS256_WITH_PUBLIC_KEY: "algorithm 'HS256' is not allowed",
    Tamper.UNKNOWN_KID: "no key in the provider's key set for kid",
    Tamper.OTHER_KEY_SAME_KID: "signature does not verify",
    Tamper.WRONG_ISS: "iss 'https://evil.example' is not the provider's issuer",
    Tamper.LOOKALIKE_ISS: "is not the provider's issuer",
    Tamper.ISS_TRAILING_SLASH: "is not the provider's issuer",
    Tamper.FOREIGN_AUD: "aud does not contain the client id",
    Tamper.EXTRA_AUD_WITHOUT_AZP: "several audiences and no azp",
    Tamper.WRONG_AZP: "azp is not the client id",
    Tamper.EXPIRED: "has expired",
    Tamper.FUTURE_IAT: "iat is in the future",
    Tamper.MISSING_NONCE: "has no nonce",
    Tamper.WRONG_NONCE: "nonce does not match",
    Tamper.MISSING_SUB: "sub is missing",
    Tamper.MISSING_EXP: "has no exp",
    Tamper.TAMPERED_SIGNATURE: "signature does not verify",
    Tamper.TAMPERED_PAYLOAD: "signature does not verify",
}


@pytest.mark.parametrize("provider", ["google", "apple"])
@pytest.mark.parametrize("tamper", list(ID_TOKEN_ATTACKS), ids=lambda t: t.value)
async def test_forged_id_token_is_rejected(
    make_adapter: MakeAdapter,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    provider: str,
    tamper: Tamper,
) -> None:
    adapter = make_adapter(provider)
    await sign_in(adapter, fake_idp)  # the key set is cached and good
    idp_clock.advance(120)  # past the refetch interval: a refetch would be allowed
    fake_idp[provider].tamper = tamper
    with pytest.raises(VerificationFailed, match=ID_TOKEN_ATTACKS[tamper]) as caught:
        await sign_in(adapter, fake_idp)
    assert "eyJ" not in str(caught.value)  # never the token itself


def test_every_tamper_is_covered() -> None:
    assert set(ID_TOKEN_ATTACKS) == set(Tamper)


async def test_leeway_accepts_small_skew(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("google")
    now = int(idp_clock.timestamp())
    fake_idp.google.claim_overrides = {"iat": now + 30, "exp": now - 30}
    verified = await sign_in(adapter, fake_idp)
    assert verified.identity.provider == "google"
    fake_idp.google.claim_overrides = {"nbf": now + 600}
    with pytest.raises(VerificationFailed, match="not valid yet"):
        await sign_in(adapter, fake_idp)


async def test_additional_issuers_are_accepted_exactly(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    adapter = make_adapter("google", additional_issuers=["accounts.example"])
    fake_idp.google.claim_overrides = {"iss": "accounts.example"}
    assert (await sign_in(adapter, fake_idp)).identity.provider == "google"
    fake_idp.google.claim_overrides = {"iss": "accounts.example/"}
    with pytest.raises(VerificationFailed, match="issuer"):
        await sign_in(adapter, fake_idp)


async def test_exp_as_a_string_is_rejected(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    fake_idp.google.claim_overrides = {"exp": "9999999999"}
    with pytest.raises(VerificationFailed, match="exp is not a number"):
        await sign_in(make_adapter("google"), fake_idp)


async def test_missing_id_token_is_an_exchange_failure(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    from tests.fakeidp import TokenMode

    fake_idp.google.token_mode = TokenMode.NO_ID_TOKEN
    with pytest.raises(ExchangeFailed, match="no id_token"):
        await sign_in(make_adapter("google"), fake_idp)


async def test_algorithm_outside_the_providers_allow_list(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    # google signs RS256; an adapter allowing only ES256 refuses its tokens
    with pytest.raises(VerificationFailed, match="algorithm 'RS256' is not allowed"):
        await sign_in(make_adapter("google", id_token_algorithms=["ES256"]), fake_idp)


@pytest.mark.parametrize("alg", ["none", "HS256", "HS512", "RSA1_5"])
def test_settings_refuse_unsafe_algorithms(fake_idp: FakeIdP, alg: str) -> None:
    with pytest.raises(ProviderSettingsError, match="id_token_algorithms"):
        fake_idp.settings("google", id_token_algorithms=["RS256", alg])


# -- code redemption: the fake's token endpoint refuses, the adapter reports ExchangeFailed ----


async def test_wrong_pkce_verifier(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    with pytest.raises(ExchangeFailed, match=r"HTTP 400 \(error=invalid_grant\)"):
        await sign_in(make_adapter("google"), fake_idp, code_verifier=secrets.token_urlsafe(48))


async def test_missing_pkce_verifier(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    with pytest.raises(ExchangeFailed, match="invalid_grant"):
        await sign_in(make_adapter("facebook"), fake_idp, code_verifier=None)


async def test_code_is_single_use(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    adapter = make_adapter("google")
    started = await start(adapter, fake_idp)
    arguments = {
        "code": started.callback.code or "",
        "redirect_uri": started.redirect_uri,
        "code_verifier": started.verifier,
        "nonce": started.nonce,
    }
    await adapter.exchange(**arguments)
    with pytest.raises(ExchangeFailed, match="invalid_grant"):
        await adapter.exchange(**arguments)


async def test_expired_code(
    make_adapter: MakeAdapter, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    adapter = make_adapter("facebook")
    started = await start(adapter, fake_idp)
    idp_clock.advance(61)
    with pytest.raises(ExchangeFailed, match="invalid_grant"):
        await adapter.exchange(
            code=started.callback.code or "",
            redirect_uri=started.redirect_uri,
            code_verifier=started.verifier,
            nonce=None,
        )


async def test_redirect_uri_must_equal_the_one_at_authorize(
    make_adapter: MakeAdapter, fake_idp: FakeIdP
) -> None:
    with pytest.raises(ExchangeFailed, match="invalid_grant"):
        await sign_in(
            make_adapter("google"), fake_idp, redirect_uri="http://127.0.0.1:8080/elsewhere"
        )


async def test_unknown_code(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    with pytest.raises(ExchangeFailed, match="invalid_grant"):
        await sign_in(make_adapter("apple"), fake_idp, code="made-up-code")


async def test_wrong_client_secret(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    with pytest.raises(ExchangeFailed, match=r"HTTP 401 \(error=invalid_client\)"):
        await sign_in(make_adapter("google", client_secret="guessed"), fake_idp)


async def test_denial_at_authorize(make_adapter: MakeAdapter, fake_idp: FakeIdP) -> None:
    for name in ("google", "facebook", "apple"):
        started = await start(make_adapter(name), fake_idp, deny=True)
        assert started.callback.error == "access_denied"
        assert started.callback.code is None
        assert started.callback.state is not None
