"""The authorization endpoint's decisions: single sign-on, freshness (``prompt=login``,
``max_age``), the resumed request after a sign-in, ``id_token_hint``, consent, ``prompt=none``
and the code it issues."""

from __future__ import annotations

import datetime as dt

import attrs
import pytest

from authgate.domain.model import UNPROVEN_AUTH_TIME
from authgate.domain.openid.authorization_request import (
    AuthorizationRefused,
    AuthorizationRequest,
)
from authgate.domain.openid.records import Grant, token_digest
from authgate.domain.secrets import pkce_challenge
from authgate.ports.openid import Redeemed
from authgate.ports.session_tokens import SessionClaims
from authgate.services.openid.authorization import (
    CodeIssued,
    ConsentAnswered,
    ConsentNeeded,
    SignInNeeded,
)
from authgate.services.sessions import SessionService
from tests.services.fakes import START, FixedClock
from tests.services.openid_fakes import (
    FIRST,
    FIRST_CALLBACK,
    SPA,
    VERIFIER,
    WEB,
    WEB_CALLBACK,
    OpenIdProvider,
)
from tests.support.stores import MemoryStore

ACCOUNT = "account-1"


@pytest.fixture
def op(store: MemoryStore, clock: FixedClock, sessions: SessionService) -> OpenIdProvider:
    return OpenIdProvider.build(store, clock, sessions)


def browser(
    account_id: str = ACCOUNT,
    *,
    auth_time: dt.datetime | None = START,
    resumes: str | None = None,
    signin_started_at: dt.datetime | None = None,
) -> SessionClaims:
    """The claims of a browser's live session, as the HTTP layer hands them over."""
    return SessionClaims(
        account_id=account_id,
        provider="google",
        scopes=frozenset(),
        expires_at=START + dt.timedelta(hours=1),
        claims={},
        session_id=f"sid-of-{account_id}",
        issued_at=START,
        auth_time=auth_time,
        resumes=resumes,
        signin_started_at=signin_started_at,
    )


async def assert_refused(
    op: OpenIdProvider,
    request: AuthorizationRequest,
    session: SessionClaims | None,
    error: str,
) -> str:
    """The request is refused at the client's redirect_uri with ``error``; its description."""
    client = op.client(request.client_id)
    with pytest.raises(AuthorizationRefused) as refused:
        await op.authorization.authorize(request, client, session)
    assert refused.value.error == error
    assert refused.value.redirect_uri == client.redirect_uris[0]
    assert refused.value.state == "state-of-the-client"
    return refused.value.description


async def code_record(op: OpenIdProvider, code: str) -> Redeemed:
    async with op.store.units.begin() as tx:
        found = await tx.authorization_codes.redeem(token_digest(code), op.clock.now())
    assert isinstance(found, Redeemed)
    return found


async def outstanding_codes(op: OpenIdProvider, client_id: str) -> int:
    async with op.store.units.begin() as tx:
        return await tx.authorization_codes.discard_outstanding(ACCOUNT, client_id)


# -- single sign-on and signing in --------------------------------------------------------------


async def test_without_a_session_the_browser_signs_in_first(op: OpenIdProvider) -> None:
    request = op.request(FIRST)
    outcome = await op.authorization.authorize(request, op.client(FIRST), None)
    assert outcome == SignInNeeded(request, op.client(FIRST), fresh=False)
    assert await outstanding_codes(op, FIRST) == 0


async def test_a_live_session_is_the_sign_in_a_code_bound_to_the_request(
    op: OpenIdProvider, clock: FixedClock
) -> None:
    request = op.request(FIRST, "openid email", nonce="n-0S6_WzA2Mj")
    outcome = await op.authorization.authorize(request, op.client(FIRST), browser())
    assert isinstance(outcome, CodeIssued) and outcome.request == request
    stored = (await code_record(op, outcome.code)).code
    assert (stored.client_id, stored.account_id, stored.session_id) == (
        FIRST,
        ACCOUNT,
        "sid-of-account-1",
    )
    assert (stored.redirect_uri, stored.scopes, stored.nonce) == (
        FIRST_CALLBACK,
        ("openid", "email"),
        "n-0S6_WzA2Mj",
    )
    assert stored.code_challenge == pkce_challenge(VERIFIER)
    assert stored.auth_time == START
    assert stored.expires_at == clock.now() + dt.timedelta(seconds=60)
    assert stored.code_hash == token_digest(outcome.code) != outcome.code


async def test_a_session_that_proved_no_login_time_issues_a_code_dated_unproven(
    op: OpenIdProvider,
) -> None:
    outcome = await op.authorization.authorize(
        op.request(FIRST), op.client(FIRST), browser(auth_time=None)
    )
    assert isinstance(outcome, CodeIssued)
    assert (await code_record(op, outcome.code)).code.auth_time == UNPROVEN_AUTH_TIME


async def test_a_session_token_without_an_id_signs_in_again(op: OpenIdProvider) -> None:
    old = attrs.evolve(browser(), session_id="")
    outcome = await op.authorization.authorize(op.request(FIRST), op.client(FIRST), old)
    assert isinstance(outcome, SignInNeeded)


async def test_prompt_none_without_a_session_is_login_required(op: OpenIdProvider) -> None:
    description = await assert_refused(op, op.request(FIRST, prompt="none"), None, "login_required")
    assert description == "nobody is signed in"


# -- freshness: prompt=login and max_age --------------------------------------------------------


async def test_prompt_login_asks_for_a_fresh_sign_in_despite_a_session(
    op: OpenIdProvider,
) -> None:
    request = op.request(FIRST, prompt="login")
    outcome = await op.authorization.authorize(request, op.client(FIRST), browser())
    assert outcome == SignInNeeded(request, op.client(FIRST), fresh=True)


async def test_max_age_accepts_a_login_within_it_and_not_beyond(
    op: OpenIdProvider, clock: FixedClock
) -> None:
    request = op.request(FIRST, max_age="300")
    clock.advance(300)
    assert isinstance(
        await op.authorization.authorize(request, op.client(FIRST), browser()), CodeIssued
    )
    clock.advance(1)
    outcome = await op.authorization.authorize(request, op.client(FIRST), browser())
    assert outcome == SignInNeeded(request, op.client(FIRST), fresh=True)
    silent = op.request(FIRST, max_age="300", prompt="none")
    description = await assert_refused(op, silent, browser(), "login_required")
    assert description == "no sign-in recent enough"


async def test_a_login_time_never_proven_is_never_fresh(op: OpenIdProvider) -> None:
    request = op.request(FIRST, max_age="3600")
    outcome = await op.authorization.authorize(
        request, op.client(FIRST), browser(auth_time=UNPROVEN_AUTH_TIME)
    )
    assert isinstance(outcome, SignInNeeded) and outcome.fresh


# -- the request resumed after the sign-in it started -------------------------------------------


def resumed(
    request: AuthorizationRequest, started: dt.datetime, auth_time: dt.datetime
) -> SessionClaims:
    """The session the sign-in that ``request`` started issued."""
    return browser(auth_time=auth_time, resumes=request.resume_key, signin_started_at=started)


async def test_the_resumed_request_is_satisfied_by_the_login_its_sign_in_proved(
    op: OpenIdProvider, clock: FixedClock
) -> None:
    request = op.request(FIRST, prompt="login")
    started = clock.now()
    clock.advance(30)
    session = resumed(request, started, auth_time=clock.now())
    assert isinstance(
        await op.authorization.authorize(request, op.client(FIRST), session), CodeIssued
    )


async def test_a_resumed_request_whose_sign_in_proved_no_new_login_ends_login_required(
    op: OpenIdProvider, clock: FixedClock
) -> None:
    request = op.request(FIRST, prompt="login")
    clock.advance(600)
    session = resumed(request, clock.now(), auth_time=START)
    description = await assert_refused(op, request, session, "login_required")
    assert description == "the sign-in did not prove a login recent enough for this request"


async def test_a_session_resumes_only_its_own_request_within_the_window(
    op: OpenIdProvider, clock: FixedClock
) -> None:
    request = op.request(FIRST, prompt="login")
    started = clock.now()
    clock.advance(minutes=16)  # past the resume window: an ordinary session now
    session = resumed(request, started, auth_time=started)
    assert await op.authorization.authorize(request, op.client(FIRST), session) == SignInNeeded(
        request, op.client(FIRST), fresh=True
    )
    other = op.request(FIRST, prompt="login", state="another-request")
    again = resumed(other, clock.now(), auth_time=clock.now())
    outcome = await op.authorization.authorize(request, op.client(FIRST), again)
    assert isinstance(outcome, SignInNeeded)


# -- id_token_hint ------------------------------------------------------------------------------


async def test_a_hint_naming_another_account_sends_the_browser_to_sign_in(
    op: OpenIdProvider,
) -> None:
    hint = op.signer.hint("account-2", FIRST)
    request = op.request(FIRST, id_token_hint=hint)
    outcome = await op.authorization.authorize(request, op.client(FIRST), browser())
    assert outcome == SignInNeeded(request, op.client(FIRST), fresh=False)
    same = op.request(FIRST, id_token_hint=op.signer.hint(ACCOUNT, FIRST))
    assert isinstance(
        await op.authorization.authorize(same, op.client(FIRST), browser()), CodeIssued
    )


async def test_a_silent_hint_naming_another_account_is_login_required(
    op: OpenIdProvider,
) -> None:
    request = op.request(FIRST, prompt="none", id_token_hint=op.signer.hint("account-2", FIRST))
    description = await assert_refused(op, request, browser(), "login_required")
    assert description == "another account is signed in"


async def test_a_hint_not_issued_by_the_provider_or_to_another_client_is_invalid(
    op: OpenIdProvider,
) -> None:
    forged = op.request(FIRST, id_token_hint="id.forged.signature")
    description = await assert_refused(op, forged, browser(), "invalid_request")
    assert description == "id_token_hint is not an ID token this provider issued"
    theirs = op.request(FIRST, id_token_hint=op.signer.hint(ACCOUNT, WEB))
    description = await assert_refused(op, theirs, browser(), "invalid_request")
    assert description == "id_token_hint was issued to another client"


# -- consent ------------------------------------------------------------------------------------


async def test_a_client_that_needs_consent_asks_for_every_scope_the_first_time(
    op: OpenIdProvider,
) -> None:
    request = op.request(WEB, "openid email offline_access")
    session = browser()
    outcome = await op.authorization.authorize(request, op.client(WEB), session)
    assert outcome == ConsentNeeded(
        request, op.client(WEB), session, ("openid", "email", "offline_access"), None
    )
    assert await outstanding_codes(op, WEB) == 0


async def test_silent_consent_needed_is_consent_required(op: OpenIdProvider) -> None:
    request = op.request(WEB, prompt="none")
    description = await assert_refused(op, request, browser(), "consent_required")
    assert description == "the person has not consented"


async def test_consent_given_records_the_grant_and_issues_the_code(
    op: OpenIdProvider, clock: FixedClock
) -> None:
    request = op.request(WEB, "openid email")
    issued = await op.authorization.consent(
        request, op.client(WEB), browser(), approved=True, seen=None
    )
    assert (await code_record(op, issued.code)).code.client_id == WEB
    grant = await op.store.grants.get(ACCOUNT, WEB)
    assert grant == Grant(ACCOUNT, WEB, {"openid", "email"}, granted_at=clock.now())
    # Granted once: the next request of those scopes needs no page.
    again = await op.authorization.authorize(request, op.client(WEB), browser())
    assert isinstance(again, CodeIssued)


async def test_only_the_scopes_not_granted_before_are_asked_for(
    op: OpenIdProvider, clock: FixedClock
) -> None:
    await op.store.grants.put(Grant(ACCOUNT, WEB, {"openid"}, granted_at=clock.now()))
    request = op.request(WEB, "openid email")
    outcome = await op.authorization.authorize(request, op.client(WEB), browser())
    assert isinstance(outcome, ConsentNeeded)
    assert (outcome.new_scopes, outcome.seen) == (("email",), clock.now())


async def test_prompt_consent_asks_again_though_granted(
    op: OpenIdProvider, clock: FixedClock
) -> None:
    await op.store.grants.put(Grant(ACCOUNT, WEB, {"openid", "email"}, granted_at=clock.now()))
    request = op.request(WEB, "openid email", prompt="consent")
    outcome = await op.authorization.authorize(request, op.client(WEB), browser())
    assert isinstance(outcome, ConsentNeeded) and outcome.new_scopes == ()


async def test_a_first_party_client_never_asks_for_consent(op: OpenIdProvider) -> None:
    request = op.request(FIRST, "openid email offline_access", prompt="consent")
    outcome = await op.authorization.authorize(request, op.client(FIRST), browser())
    assert isinstance(outcome, CodeIssued)
    assert await op.store.grants.get(ACCOUNT, FIRST) is None


async def test_consent_declined_is_access_denied_and_records_nothing(
    op: OpenIdProvider,
) -> None:
    request = op.request(WEB)
    with pytest.raises(AuthorizationRefused) as refused:
        await op.authorization.consent(request, op.client(WEB), browser(), approved=False)
    assert (refused.value.error, refused.value.redirect_uri) == ("access_denied", WEB_CALLBACK)
    assert await op.store.grants.get(ACCOUNT, WEB) is None
    assert await outstanding_codes(op, WEB) == 0


async def test_a_consent_form_answers_once(op: OpenIdProvider, clock: FixedClock) -> None:
    request = op.request(WEB)
    await op.authorization.consent(request, op.client(WEB), browser(), approved=True, seen=None)
    clock.advance(5)
    with pytest.raises(ConsentAnswered):
        await op.authorization.consent(request, op.client(WEB), browser(), approved=True, seen=None)
    assert await outstanding_codes(op, WEB) == 1  # the first answer's code only
    grant = await op.store.grants.get(ACCOUNT, WEB)
    assert grant is not None and grant.granted_at == START


async def test_a_public_client_is_decided_like_any_other(op: OpenIdProvider) -> None:
    outcome = await op.authorization.authorize(op.request(SPA), op.client(SPA), browser())
    assert isinstance(outcome, ConsentNeeded) and outcome.new_scopes == ("openid", "email")


def test_the_issuer_is_the_signers(op: OpenIdProvider) -> None:
    assert op.authorization.issuer == "https://auth.example.com"
