"""The ``authorization_code`` grant: a code is redeemed once, by its client, with its
``redirect_uri`` and PKCE verifier, while its session is live and its consent stands; what it
starts (a token family, the session's client, the grant's last use) commits with it, and a
replay revokes what it issued."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable

import pytest

from authgate.domain.openid.records import token_digest
from authgate.domain.openid.refusals import InvalidGrant, OAuthInvalidRequest
from authgate.services.sessions import SessionService
from tests.services.conftest import CLIENT, SignIns
from tests.services.fakes import FixedClock
from tests.services.openid_fakes import (
    FIRST,
    OTHER_VERIFIER,
    SPA,
    WEB,
    FakeSigner,
    OpenIdProvider,
)
from tests.support.stores import MemoryStore


@pytest.fixture
def op(store: MemoryStore, clock: FixedClock, sessions: SessionService) -> OpenIdProvider:
    return OpenIdProvider.build(store, clock, sessions)


async def assert_invalid_grant(awaitable: Awaitable[object], description: str, detail: str) -> None:
    """``awaitable`` raises invalid_grant with ``description`` (``detail`` for the log)."""
    with pytest.raises(InvalidGrant) as refused:
        await awaitable
    assert refused.value.error == "invalid_grant"
    assert (refused.value.description, refused.value.detail) == (description, detail)


def family_of(signer: FakeSigner, access_token: str) -> str:
    family: str = signer.access_tokens[access_token]["fam"]
    return family


async def test_a_code_redeems_once_for_tokens_and_starts_its_family(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await op.session(flow)
    code = await op.redeem(FIRST, await op.code(session, FIRST, "openid email"))
    assert code.scopes == ("openid", "email") and code.refresh_token is None
    assert code.expires_in == 600
    family = family_of(op.signer, code.access_token)
    [started] = await op.store.refresh_tokens.for_account(session.account_id)
    assert (started.family_id, started.client_id, started.session_id) == (
        family,
        FIRST,
        session.session_id,
    )
    assert started.expires_at == clock.now() + dt.timedelta(minutes=10)
    assert await op.store.refresh_tokens.is_family_live(family, clock.now())
    [served] = await op.store.session_clients.for_session(session.session_id)
    assert (served.client_id, served.account_id, served.first_at) == (
        FIRST,
        session.account_id,
        clock.now(),
    )
    assert op.signer.id_tokens[code.id_token].claims["sid"] == session.session_id


async def test_the_redemption_touches_the_grant_of_a_client_that_needs_consent(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await op.session(flow)
    code = await op.code(session, WEB)
    clock.advance(20)
    await op.redeem(WEB, code)
    grant = await op.store.grants.get(session.account_id, WEB)
    assert grant is not None and grant.last_used_at == clock.now()


async def test_offline_access_starts_the_family_with_a_refresh_token(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    session = await op.session(flow)
    issued = await op.redeem(FIRST, await op.code(session, FIRST, "openid offline_access"))
    assert issued.refresh_token is not None
    stored = await op.store.refresh_tokens.get(token_digest(issued.refresh_token))
    assert stored is not None and stored.current(clock.now())
    assert stored.family_id == family_of(op.signer, issued.access_token)
    assert stored.scopes == ("openid", "offline_access")
    assert stored.expires_at == clock.now() + dt.timedelta(days=7)


async def test_a_code_presented_again_is_refused_and_revokes_what_it_issued(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    session = await op.session(flow)
    code = await op.code(session, FIRST, "openid offline_access")
    issued = await op.redeem(FIRST, code)
    with caplog.at_level(logging.WARNING, "authgate.security"):
        await assert_invalid_grant(
            op.redeem(FIRST, code), "the code was used already", "code replayed"
        )
    assert "presented again" in caplog.text
    assert not await op.store.refresh_tokens.is_family_live(
        family_of(op.signer, issued.access_token), clock.now()
    )
    assert issued.refresh_token is not None
    stored = await op.store.refresh_tokens.get(token_digest(issued.refresh_token))
    assert stored is not None and not stored.current(clock.now())


async def test_an_unknown_or_expired_code_is_refused(
    op: OpenIdProvider, flow: SignIns, clock: FixedClock
) -> None:
    await assert_invalid_grant(
        op.redeem(FIRST, "no-such-code"),
        "the code is unknown or expired",
        "code unknown or expired unused",
    )
    code = await op.code(await op.session(flow), FIRST)
    clock.advance(60)
    await assert_invalid_grant(
        op.redeem(FIRST, code), "the code is unknown or expired", "code unknown or expired unused"
    )


@pytest.mark.parametrize("verifier", [OTHER_VERIFIER, None, "short"])
async def test_a_verifier_that_does_not_match_spends_the_code(
    op: OpenIdProvider, flow: SignIns, verifier: str | None
) -> None:
    session = await op.session(flow)
    code = await op.code(session, FIRST)
    await assert_invalid_grant(
        op.redeem(FIRST, code, verifier=verifier),
        "code_verifier does not match the code_challenge",
        "PKCE mismatch",
    )
    # Spent: the right verifier comes too late, and nothing was started.
    await assert_invalid_grant(op.redeem(FIRST, code), "the code was used already", "code replayed")
    assert await op.store.refresh_tokens.for_account(session.account_id) == []


async def test_a_redirect_uri_other_than_the_requests_is_refused(
    op: OpenIdProvider, flow: SignIns
) -> None:
    code = await op.code(await op.session(flow), FIRST)
    await assert_invalid_grant(
        op.redeem(FIRST, code, redirect_uri="https://first.example.com/other"),
        "redirect_uri is not the one of the authorization request",
        "redirect_uri differs",
    )


async def test_a_code_of_another_client_is_refused(
    op: OpenIdProvider, flow: SignIns, caplog: pytest.LogCaptureFixture
) -> None:
    session = await op.session(flow)
    code = await op.code(session, FIRST)
    with caplog.at_level(logging.WARNING, "authgate.security"):
        await assert_invalid_grant(
            op.redeem(SPA, code, redirect_uri="https://first.example.com/cb"),
            "the code was issued to another client",
            "code of another client",
        )
    assert f"client {SPA} presented a code issued to client {FIRST}" in caplog.text
    assert await op.store.session_clients.for_session(session.session_id) == []


async def test_a_code_whose_consent_was_withdrawn_is_refused(
    op: OpenIdProvider, flow: SignIns
) -> None:
    session = await op.session(flow)
    code = await op.code(session, WEB)
    assert await op.store.grants.remove(session.account_id, WEB)
    await assert_invalid_grant(
        op.redeem(WEB, code),
        "the consent this code was issued under was withdrawn",
        "code's consent withdrawn",
    )
    assert await op.store.refresh_tokens.for_account(session.account_id) == []


async def test_a_code_whose_session_ended_is_refused(op: OpenIdProvider, flow: SignIns) -> None:
    session = await op.session(flow)
    code = await op.code(session, FIRST)
    await op.sessions.revoke(
        session.account_id, session.session_id, client=CLIENT, provider="google"
    )
    await assert_invalid_grant(
        op.redeem(FIRST, code),
        "the sign-in session of this code has ended",
        "code's session ended",
    )
    assert await op.store.refresh_tokens.for_account(session.account_id) == []


@pytest.mark.parametrize(
    ("form", "description"),
    [
        ({"redirect_uri": "https://first.example.com/cb"}, "code is missing"),
        ({"code": "c", "redirect_uri": ""}, "redirect_uri is missing"),
        ({"code": "c" * 4097, "redirect_uri": "https://first.example.com/cb"}, "code is too long"),
    ],
)
async def test_a_form_without_its_parameters_is_an_invalid_request(
    op: OpenIdProvider, form: dict[str, str], description: str
) -> None:
    with pytest.raises(OAuthInvalidRequest) as refused:
        await op.tokens.grant(op.client(FIRST), {"grant_type": "authorization_code", **form})
    assert (refused.value.error, refused.value.description) == ("invalid_request", description)
