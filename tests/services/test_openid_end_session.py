"""The end-session endpoint's decisions (RP-Initiated Logout 1.0): end at once only for a hint
of the very session the browser holds, otherwise ask the person (or nothing to end); go back to
the client only for a request valid throughout; say why a request cannot be acted on."""

from __future__ import annotations

import pytest

from authgate.services.openid.end_session import (
    BrowserSession,
    EndSessionDecision,
    EndSessionRequest,
    Verdict,
)
from authgate.services.sessions import SessionService
from tests.services.fakes import FixedClock
from tests.services.openid_fakes import (
    FIRST,
    WEB,
    WEB_AFTER_LOGOUT,
    OpenIdProvider,
)
from tests.support.stores import MemoryStore

BROWSER = BrowserSession(account_id="account-1", session_id="session-1")
BAD_HINT = "The application's sign-out request could not be verified."
BACK = WEB_AFTER_LOGOUT + "?state=s-1"


@pytest.fixture
def op(store: MemoryStore, clock: FixedClock, sessions: SessionService) -> OpenIdProvider:
    return OpenIdProvider.build(store, clock, sessions)


def hint(op: OpenIdProvider, *, session_id: str = "session-1", audience: str = WEB) -> str:
    return op.signer.hint("account-1", audience, sid=session_id)


async def decide(
    op: OpenIdProvider,
    browser: BrowserSession | None = BROWSER,
    *,
    visible: bool = True,
    confirmed: bool = False,
    **request: str,
) -> EndSessionDecision:
    return await op.end_session.decide(
        EndSessionRequest(**request), browser, session_visible=visible, confirmed=confirmed
    )


async def test_a_hint_of_this_very_session_ends_it_at_once_and_goes_back(
    op: OpenIdProvider,
) -> None:
    decision = await decide(
        op, id_token_hint=hint(op), post_logout_redirect_uri=WEB_AFTER_LOGOUT, state="s-1"
    )
    assert decision == EndSessionDecision(Verdict.END, BACK, op.client(WEB))


async def test_a_hint_of_another_session_asks_the_person_first(op: OpenIdProvider) -> None:
    decision = await decide(op, id_token_hint=hint(op, session_id="session-0"))
    assert decision == EndSessionDecision(Verdict.CONFIRM, None, op.client(WEB))


async def test_without_a_hint_the_person_confirms(op: OpenIdProvider) -> None:
    assert await decide(op) == EndSessionDecision(Verdict.CONFIRM)
    assert await decide(op, client_id=WEB, post_logout_redirect_uri=WEB_AFTER_LOGOUT) == (
        EndSessionDecision(Verdict.CONFIRM, WEB_AFTER_LOGOUT, op.client(WEB))
    )


async def test_no_session_seen_is_nothing_to_end_only_when_the_cookie_would_be_sent(
    op: OpenIdProvider,
) -> None:
    assert (await decide(op, None, id_token_hint=hint(op))).verdict is Verdict.NOTHING_TO_END
    # A cross-site POST carries no SameSite=Lax cookie: no session seen proves nothing.
    assert (
        await decide(op, None, visible=False, id_token_hint=hint(op))
    ).verdict is Verdict.CONFIRM


async def test_a_confirmed_request_ends_the_session_and_goes_back_if_valid(
    op: OpenIdProvider,
) -> None:
    decision = await decide(
        op, confirmed=True, client_id=WEB, post_logout_redirect_uri=WEB_AFTER_LOGOUT, state="s-1"
    )
    assert decision == EndSessionDecision(Verdict.END, BACK, op.client(WEB))
    assert (await decide(op, None, confirmed=True)).verdict is Verdict.NOTHING_TO_END


@pytest.mark.parametrize("token", ["id.forged.signature", "not-a-token"])
async def test_a_hint_the_provider_did_not_sign_is_a_problem_never_a_redirect(
    op: OpenIdProvider, token: str
) -> None:
    decision = await decide(op, id_token_hint=token, post_logout_redirect_uri=WEB_AFTER_LOGOUT)
    assert decision == EndSessionDecision(Verdict.CONFIRM, None, None, BAD_HINT)
    assert await decide(op, None, id_token_hint=token) == EndSessionDecision(
        Verdict.NOTHING_TO_END, None, None, BAD_HINT
    )


async def test_a_token_whose_audience_is_no_client_is_a_bad_hint(op: OpenIdProvider) -> None:
    session_like = op.signer.hint("account-1", "authgate-sessions", sid="session-1")
    assert (await decide(op, id_token_hint=session_like)).problem == BAD_HINT


async def test_an_unknown_client_is_a_problem(op: OpenIdProvider) -> None:
    decision = await decide(op, client_id="nobody", post_logout_redirect_uri=WEB_AFTER_LOGOUT)
    assert decision == EndSessionDecision(
        Verdict.CONFIRM,
        None,
        None,
        "The sign-out request names an application that is not registered.",
    )


async def test_a_client_id_other_than_the_hints_is_a_problem(op: OpenIdProvider) -> None:
    decision = await decide(op, id_token_hint=hint(op), client_id=FIRST)
    assert decision.verdict is Verdict.CONFIRM and decision.client is None
    assert decision.problem == "The sign-out request names two different applications."


async def test_a_redirect_without_a_client_is_a_problem(op: OpenIdProvider) -> None:
    decision = await decide(op, post_logout_redirect_uri=WEB_AFTER_LOGOUT)
    assert (decision.redirect, decision.problem) == (
        None,
        "The sign-out request does not say which application sent it.",
    )


async def test_an_unregistered_redirect_is_a_problem_and_the_client_is_named(
    op: OpenIdProvider,
) -> None:
    decision = await decide(
        op, id_token_hint=hint(op), post_logout_redirect_uri=WEB_AFTER_LOGOUT + "?x=1"
    )
    assert decision == EndSessionDecision(
        Verdict.CONFIRM,
        None,
        op.client(WEB),
        "The application asked to return to an address it has not registered.",
    )


async def test_a_hint_of_several_audiences_names_its_authorized_party(op: OpenIdProvider) -> None:
    token = op.signer.hint("account-1", [FIRST, WEB], sid="session-1", azp=WEB)
    decision = await decide(op, id_token_hint=token, post_logout_redirect_uri=WEB_AFTER_LOGOUT)
    assert decision == EndSessionDecision(Verdict.END, WEB_AFTER_LOGOUT, op.client(WEB))
    without_azp = op.signer.hint("account-1", [FIRST, WEB], sid="session-1")
    assert (await decide(op, id_token_hint=without_azp)).client is None
