"""Sign-in with an external provider: initiation (spec 4.5) and callback (spec 4.6).

The service is pure orchestration over ports; every rule of the two processing orders lives
here, in the spec's order, and the HTTP entrypoint only translates.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from authgate.domain import errors
from authgate.domain.model import (
    UNPROVEN_AUTH_TIME,
    Account,
    Authorization,
    ClientInfo,
    Intent,
    IssuedSession,
    LinkedIdentity,
    Outcome,
    PendingSignIn,
    SessionRecord,
    SignedIn,
    VerifiedIdentity,
)
from authgate.domain.openid.authorization_request import resume_key, resume_needs_fresh_login
from authgate.domain.redirects import app_url_for, is_resume_url, safe_return_to
from authgate.domain.secrets import binding_hash, new_secret, pkce_challenge
from authgate.domain.text import has_control_characters, printable, storable
from authgate.ports.accounts import AccountRepository, IdentityRace, IdentityTaken
from authgate.ports.clock import Clock
from authgate.ports.events import SignInEventLog
from authgate.ports.metrics import Metrics
from authgate.ports.provider import ExchangeFailed, IdentityProvider, VerificationFailed
from authgate.ports.session_tokens import ResumedRequest
from authgate.ports.state import StateStore, StateStoreFull
from authgate.ports.unit_of_work import Transaction, UnitOfWork
from authgate.services.audit import (
    audit_event,
    log_event,
    or_no_metrics,
    record_audit,
    record_refusal,
    security_log,
)
from authgate.services.provider_tokens import ProviderTokenService, or_no_provider_tokens
from authgate.services.sessions import SessionService

log = logging.getLogger("authgate.signin")

MAX_STATE_LENGTH = 512

# How much earlier than the re-authentication request the provider's login may say it was
# (the two clocks differ).
REAUTHENTICATION_SKEW = dt.timedelta(seconds=60)

# Intents started by a signed-in caller, for the caller's own account.
CALLER_INTENTS = frozenset({Intent.LINK, Intent.REAUTHENTICATE})

# Provider error codes that mean the user said no: OAuth's own, and Sign in with Apple's
# cancel button.
DENIALS = frozenset({"access_denied", "user_cancelled_authorize"})


def _page(path_field: str) -> Any:
    """The default of a page's address: the application's address joined with its path."""
    return attrs.Factory(
        lambda policy: app_url_for(policy.app_url, getattr(policy, path_field)), takes_self=True
    )


@attrs.frozen
class SignInPolicy:
    """The configurable rules of sign-in."""

    app_url: str
    callback_urls: Mapping[str, frozenset[str]]  # per provider: RFC 9207 (mix-up)
    state_ttl: dt.timedelta = dt.timedelta(minutes=10)
    require_binding: bool = True
    login_path: str = "/login"
    onboarding_path: str = "/onboarding"
    dashboard_path: str = "/dashboard"
    # The service's own authorization endpoint (as an OpenID Provider): a sign-in started for
    # an authorization request returns there to resume it, first-time or not.
    resume_urls: frozenset[str] = frozenset()
    # Where a sign-in sends the browser on the application: fixed by the configuration, so
    # joined once here rather than at every callback.
    login_url: str = attrs.field(init=False, default=_page("login_path"))
    onboarding_url: str = attrs.field(init=False, default=_page("onboarding_path"))
    dashboard_url: str = attrs.field(init=False, default=_page("dashboard_path"))

    def destination(self, return_to: str | None, first_time: bool = False) -> str:
        """Rule 9: where the browser goes once signed in (``return_to`` made safe already): an
        application's authorization request, else the onboarding page the first time, else
        ``return_to`` or the dashboard."""
        if return_to and is_resume_url(return_to, self.resume_urls):
            return return_to
        if first_time:
            return self.onboarding_url
        return return_to or self.dashboard_url


def _in_order(providers: Mapping[str, IdentityProvider]) -> dict[str, IdentityProvider]:
    """The configured providers; their order is the order of error messages."""
    return dict(providers)


@attrs.define(eq=False, repr=False, slots=False, kw_only=True)
class SignInService:
    """Starts and completes sign-ins; creates, logs in and links accounts."""

    providers: dict[str, IdentityProvider] = attrs.field(converter=_in_order)
    accounts: AccountRepository
    states: StateStore
    events: SignInEventLog
    units: UnitOfWork
    sessions: SessionService
    clock: Clock
    policy: SignInPolicy
    metrics: Metrics = attrs.field(default=None, converter=or_no_metrics)
    provider_tokens: ProviderTokenService = attrs.field(
        default=None, converter=or_no_provider_tokens
    )

    def provider(self, name: str) -> IdentityProvider:
        try:
            return self.providers[name]
        except KeyError:
            raise errors.InvalidProvider(name, list(self.providers)) from None

    # -- initiation (spec 4.5) --------------------------------------------------------------

    async def start(
        self,
        provider_name: str,
        *,
        redirect_uri: str | None,
        binding: str,
        state: str | None = None,
        return_to: str | None = None,
        intent: Intent = Intent.LOGIN,
        account_id: str | None = None,
        session_id: str | None = None,
        login_hint: str | None = None,
    ) -> Authorization:
        """Store a pending sign-in and build the provider's authorization URL. A link or a
        re-authentication is for the signed-in caller's ``account_id``, started by its
        session ``session_id``. ``login_hint`` is passed on to providers that take one. A
        sign-in returning to an application's authorization request that needs a fresh login
        asks the provider to log the user in again, as a re-authentication does."""
        provider = self.provider(provider_name)  # rule 1
        started = time.perf_counter()
        try:
            redirect_uri = self._allowed_callback(provider, redirect_uri)
            caller = None
            if intent in CALLER_INTENTS:
                caller = (account_id, session_id) if account_id and session_id else None
                await self._check_caller(provider, intent, caller)
            state = _state_or_new(state)  # rule 4
            verifier = new_secret(48) if provider.uses_pkce else None  # rule 7
            nonce = new_secret() if provider.uses_nonce else None
            return_to = safe_return_to(return_to, self.policy.app_url, self.policy.resume_urls)
            fresh_login = (
                return_to is not None
                and is_resume_url(return_to, self.policy.resume_urls)
                and resume_needs_fresh_login(return_to)
            )
            url = await provider.authorization_url(  # rule 3: ProviderUnavailable → 500
                state=state,
                redirect_uri=redirect_uri,
                code_challenge=pkce_challenge(verifier) if verifier else None,
                nonce=nonce,
                reauthenticate=intent is Intent.REAUTHENTICATE or fresh_login,
                **_hint(login_hint),
            )
            now = self.clock.now()
            pending = PendingSignIn(
                state=state,
                provider=provider.name,
                redirect_uri=redirect_uri,
                intent=intent,
                code_verifier=verifier,
                nonce=nonce,
                binding_hash=binding_hash(binding),
                created_at=now,
                expires_at=now + self.policy.state_ttl,
                return_to=return_to,
                account_id=caller[0] if caller else None,
                session_id=caller[1] if caller else None,
            )
            # Rule 11: kept by provider, state and browser (a caller's state value is echoed
            # whoever else uses it, rule 4).
            try:
                await self.states.put(pending)
            except StateStoreFull as e:
                log.error("pending sign-in refused: the state store is full (%s)", e)
                raise errors.TemporarilyUnavailable() from None
            return Authorization(
                provider=provider.name,
                authorization_url=url,
                client_id=provider.client_id,
                scopes=provider.scopes,
                response_type="code",
                state=state,
                state_max_age=int(self.policy.state_ttl.total_seconds()),
            )
        finally:
            self.metrics.initiation_duration(provider.name, time.perf_counter() - started)

    def _allowed_callback(self, provider: IdentityProvider, redirect_uri: str | None) -> str:
        """Rules 2 and 5: the callback address, one configured for the provider."""
        if not redirect_uri:
            raise errors.MissingParameter("redirect_uri")
        if redirect_uri not in self.policy.callback_urls.get(provider.name, ()):
            raise errors.InvalidRequest(
                f"redirect_uri is not an allowed callback address for provider {provider.name}"
            )
        return redirect_uri

    async def _check_caller(
        self, provider: IdentityProvider, intent: Intent, caller: tuple[str, str] | None
    ) -> None:
        """A link or a re-authentication: started by a signed-in caller; a re-authentication
        through a provider linked to the caller's account that proves its login time."""
        if caller is None:
            raise errors.NotAuthenticated(f"{intent.value} needs a signed-in caller", intent.value)
        if intent is Intent.REAUTHENTICATE and provider.name not in {
            i.identity.provider for i in await self.accounts.list_identities(caller[0])
        }:
            raise errors.InvalidRequest(
                f"provider {provider.name} is not linked to the signed-in account: "
                "re-authenticate with a linked one"
            )
        if intent is Intent.REAUTHENTICATE and not provider.proves_login_time:
            # Its answer would prove no login time: the step-up could never succeed.
            raise errors.InvalidRequest(
                f"provider {provider.name} cannot prove a recent sign-in (it signs no "
                "auth_time): re-authenticate with a passkey or with a linked provider "
                "that can"
            )

    # -- callback (spec 4.6) ----------------------------------------------------------------

    async def complete(
        self,
        provider_name: str,
        *,
        code: str | None,
        state: str | None,
        binding: str | None,
        client: ClientInfo,
        error: str | None = None,
        error_description: str | None = None,
        user: str | None = None,
        iss: str | None = None,
    ) -> SignedIn:
        """Complete a sign-in; raises a :class:`~authgate.domain.errors.SignInError` otherwise.
        Every outcome is recorded as a sign-in event: a success in the unit of work that signs in,
        a failure on its own."""
        provider = self.provider(provider_name)  # rule 1
        started = time.perf_counter()
        try:
            now = self.clock.now()
            if error is not None:  # rule 2
                if state:
                    # Consume this browser's pending sign-in so it cannot be completed later; a
                    # callback from anyone else (no or another binding cookie) consumes nothing.
                    with contextlib.suppress(errors.InvalidState):
                        await self._take_state(provider, state, binding, now)
                if error in DENIALS:
                    raise errors.AccessDenied(error, error_description)
                raise errors.ProviderError(error, error_description)
            if not code:  # rule 3
                raise errors.InvalidRequest("missing required parameter: code")
            if not state:
                raise errors.InvalidRequest("missing required parameter: state")
            pending = await self._take_state(provider, state, binding, now)  # rule 4
            await self._check_response_issuer(provider, iss)  # RFC 9207, before the code is sent
            verified = await self._verify(provider, pending, code, user)  # rules 5-7
            try:  # rules 8-9
                signed_in = await self._sign_in(provider, pending, verified, client)
            except IdentityRace:
                # A concurrent first sign-in of the same identity created its account first;
                # this unit wrote nothing. Once more: the look-up now finds that account.
                signed_in = await self._sign_in(provider, pending, verified, client)
        except errors.SignInError as e:
            outcome = _outcome_of(e)
            self.metrics.sign_in(provider.name, outcome.value, _reason_of(e))
            self.metrics.callback_duration(provider.name, time.perf_counter() - started)
            failed = audit_event(
                self.clock.now(), provider.name, outcome, client, None, error_detail(e)
            )
            await record_refusal(self.events, failed, log, "sign-in event")
            raise
        self.metrics.sign_in(provider.name, signed_in.outcome.value, "none")
        self.metrics.callback_duration(provider.name, time.perf_counter() - started)
        return signed_in

    async def _take_state(
        self, provider: IdentityProvider, state: str, binding: str | None, now: dt.datetime
    ) -> PendingSignIn:
        """Take the pending sign-in of this provider, state and browser; a mismatch in any of
        the three finds nothing, so a callback that would be refused consumes nothing."""
        if binding is None and self.policy.require_binding:
            raise errors.InvalidState("binding cookie absent")
        browser = binding_hash(binding) if binding is not None else None
        pending = await self.states.take(provider.name, state, browser, now)
        if pending is None:
            raise errors.InvalidState(
                "no pending sign-in for this provider, state and browser (unknown, expired, "
                "already used, or started elsewhere)"
            )
        return pending

    async def _check_response_issuer(self, provider: IdentityProvider, iss: str | None) -> None:
        """RFC 9207: an authorization response from another provider's issuer (a mix-up
        attack) is refused before its code reaches this provider's token endpoint."""
        try:
            await provider.check_response_issuer(iss)
        except VerificationFailed as e:
            security_log.warning("security event: %s authorization response: %s", provider.name, e)
            raise errors.AuthenticationFailed("invalid_issuer", str(e)) from None
        except ExchangeFailed as e:
            log.warning("provider %s: cannot check the response issuer: %s", provider.name, e)
            raise errors.AuthenticationFailed("token_exchange_failed", str(e)) from None

    async def _verify(
        self, provider: IdentityProvider, pending: PendingSignIn, code: str, user: str | None
    ) -> VerifiedIdentity:
        try:
            verified = await provider.exchange(
                code=code,
                redirect_uri=pending.redirect_uri,
                code_verifier=pending.code_verifier,
                nonce=pending.nonce,
                user=user,
            )
        except ExchangeFailed as e:
            log.warning("token exchange with %s failed: %s", provider.name, e)
            raise errors.AuthenticationFailed("token_exchange_failed", str(e)) from None
        except VerificationFailed as e:
            security_log.warning(
                "security event: %s answer failed verification: %s", provider.name, e
            )
            raise errors.AuthenticationFailed("invalid_id_token", str(e)) from None
        subject = verified.identity.subject
        if verified.identity.provider != provider.name or not subject:
            raise errors.AuthenticationFailed("invalid_id_token", "identity without a subject")
        if has_control_characters(subject):
            raise errors.AuthenticationFailed("invalid_id_token", "subject has control characters")
        if verified.email_verified is False:
            security_log.warning(
                "security event: %s reports email_verified=false for %s",
                provider.name,
                verified.identity,
            )
            raise errors.AuthenticationFailed("email_not_verified", "email_verified is false")
        # What the provider (or, for Apple's first-time name, the browser) sent, made storable
        # and showable before any port sees it.
        return attrs.evolve(
            verified,
            email=printable(verified.email, 320),
            name=printable(verified.name, 200),
            profile=storable(dict(verified.profile)),
        )

    async def _sign_in(
        self,
        provider: IdentityProvider,
        pending: PendingSignIn,
        verified: VerifiedIdentity,
        client: ClientInfo,
    ) -> SignedIn:
        """The callback's one account step: look the identity up, refuse a disabled one, find,
        create or link the account (rule 8) and write what a sign-in writes, in one unit of
        work: the account or identity, the last sign-in, the session's record, the sealed
        provider token and the audit event commit together or not at all."""
        now = self.clock.now()
        async with self.units.begin() as tx:
            # One read for the identity's state and its account (None: nobody holds it).
            found = await tx.accounts.find_with_identity(verified.identity)
            holder: Account | None = None
            if found is not None:
                _refuse_disabled(verified, found[0])
                holder = found[1]
            authenticated_at = _authenticated_at(verified, now)
            started_by = (
                await self._starting_session(tx, pending, now)
                if pending.intent in CALLER_INTENTS
                else None
            )
            account, outcome = await self._account_for(
                tx.accounts, pending, verified, holder, authenticated_at, now
            )
            await tx.accounts.record_login(account.id, now)
            resumes = resumed_request(pending.return_to, pending.created_at, self.policy)
            if started_by is not None:  # one browser, one session
                session = await self.sessions.prove(
                    tx, started_by, authenticated_at, resumes=resumes
                )
            else:
                session = await self.sessions.issue(
                    tx,
                    account.id,
                    verified.identity.provider,
                    client,
                    auth_time=authenticated_at,
                    provider_session=verified.provider_session,
                    resumes=resumes,
                )
            await self.provider_tokens.keep(tx, account.id, verified, now)
            at = self.clock.now()
            event = await record_audit(
                tx, at, provider.name, outcome, client, account.id, logged=False
            )
        # Logged and counted once committed: a unit of work that fails (one that lost the race
        # for a new identity runs again) signed nobody in and issued no session.
        log_event(event)
        self.metrics.sessions_issued(provider.name)
        first_time = outcome is Outcome.REGISTERED
        return SignedIn(
            account=account,
            provider=provider.name,
            first_time=first_time,
            destination=self.policy.destination(pending.return_to, first_time),  # rule 9
            session=session,
            outcome=outcome,
            session_max_age=session_max_age(session, now),
        )

    async def _starting_session(
        self, tx: Transaction, pending: PendingSignIn, now: dt.datetime
    ) -> SessionRecord:
        """The caller's session that started a link or re-authentication: its callback completes
        only while that session is live (signing out cancels what the session started) and, for a
        link, while its sign-in is recent enough (RFC 9470)."""
        record = (
            await tx.sessions.get(pending.session_id, for_change=True)
            if pending.session_id
            else None
        )
        if record is None or record.account_id != pending.account_id or not record.live(now):
            raise errors.AuthenticationFailed(
                "session_ended", f"the session that started this {pending.intent.value} ended"
            )
        if pending.intent is Intent.LINK:
            try:
                self.sessions.require_recent_authentication(record.auth_time)
            except errors.ReauthenticationRequired:
                raise errors.AuthenticationFailed(
                    "reauthentication_required",
                    "the sign-in of the session that started this link is no longer recent",
                ) from None
        return record

    @staticmethod
    async def _account_for(
        accounts: AccountRepository,
        pending: PendingSignIn,
        verified: VerifiedIdentity,
        holder: Account | None,
        authenticated_at: dt.datetime,
        now: dt.datetime,
    ) -> tuple[Account, Outcome]:
        """Rule 8: the account the callback signs in to (linked, found or created);
        ``holder`` is the account that held the identity when the unit of work read it."""
        if pending.intent is Intent.REAUTHENTICATE:
            assert pending.account_id is not None
            if holder is None or holder.id != pending.account_id:
                raise errors.ReauthenticationRefused("reauthentication_identity_mismatch")
            # The provider must prove a login after the request (a minute of clock skew
            # allowed), or it did not ask again.
            if authenticated_at < pending.created_at - REAUTHENTICATION_SKEW:
                raise errors.ReauthenticationRefused("stale_provider_authentication")
            return holder, Outcome.REAUTHENTICATED
        if pending.intent is Intent.LINK:
            assert pending.account_id is not None
            try:
                await accounts.link_identity(pending.account_id, verified, now)
            except IdentityTaken:
                raise errors.IdentityLinkedElsewhere() from None
            except KeyError:  # the caller's account was deleted meanwhile
                raise errors.AccountNotFound() from None
            linked_to = await accounts.get(pending.account_id)
            if linked_to is None:
                raise errors.AccountNotFound()
            return linked_to, Outcome.LINKED
        if holder is not None:
            return holder, Outcome.SIGNED_IN
        if pending.intent is not Intent.REGISTER:
            raise errors.AccountNotFound()
        created, first_time = await accounts.create_with_identity(verified, now)
        return created, Outcome.REGISTERED if first_time else Outcome.SIGNED_IN


_OUTCOMES = {
    errors.AccessDenied: Outcome.DENIED,
    errors.InvalidState: Outcome.INVALID_STATE,
    errors.AccountNotFound: Outcome.ACCOUNT_NOT_FOUND,
}


def _outcome_of(e: errors.SignInError) -> Outcome:
    return next((o for kind, o in _OUTCOMES.items() if isinstance(e, kind)), Outcome.FAILED)


def _reason_of(e: errors.SignInError) -> str:
    """A bounded reason code for metrics: the code's own reason, else the error's kind (never
    the provider's error text, which the provider chooses)."""
    if isinstance(e, errors.AuthenticationFailed | errors.ReauthenticationRefused):
        return e.reason
    return error_kind(e)


def error_kind(e: Exception) -> str:
    """The error's kind as a bounded reason code: its class name in snake case."""
    name = type(e).__name__
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def session_max_age(session: IssuedSession, now: dt.datetime) -> int:
    """The seconds left of a session issued or proven ``now``: its cookie's ``Max-Age``."""
    return max(int((session.expires_at - now).total_seconds()), 0)


def _state_or_new(state: str | None) -> str:
    """The caller's state value, when it can be echoed safely; a new one when none."""
    if state is None:
        return new_secret()
    if not 0 < len(state) <= MAX_STATE_LENGTH or has_control_characters(state):
        raise errors.InvalidRequest(
            f"state must be 1 to {MAX_STATE_LENGTH} characters without control characters"
        )
    return state


def _hint(login_hint: str | None) -> dict[str, str]:
    """A hint is only a hint: one that cannot be passed on safely is dropped."""
    if login_hint and len(login_hint) <= 256 and not has_control_characters(login_hint):
        return {"login_hint": login_hint}
    return {}


def error_detail(e: errors.SignInError) -> str:
    """The audit event's detail of a refused sign-in, a provider's or a passkey's."""
    if isinstance(e, errors.AuthenticationFailed | errors.PasskeyNotVerified):
        return e.reason
    if isinstance(e, errors.AccessDenied | errors.ProviderError):
        return e.provider_error[:100]
    if isinstance(e, errors.InvalidState | errors.InvalidPasskeyChallenge):
        return e.detail
    if isinstance(e, errors.InvalidPasskeyResponse):
        return e.detail
    return type(e).__name__


def _authenticated_at(verified: VerifiedIdentity, now: dt.datetime) -> dt.datetime:
    """When the person last logged in at the provider, as far as this sign-in proves it: only
    a signed statement does, the ``auth_time`` of a verified ID token (never after now), else
    :data:`~authgate.domain.model.UNPROVEN_AUTH_TIME`. A request that asked the provider to
    log the person in again (``prompt=login``, ``max_age=0``, ``auth_type=reauthenticate``)
    proves nothing: whoever holds the browser can strip those parameters from its address, and
    the provider then answers from its own long-lived session."""
    if verified.auth_time is not None:
        return min(verified.auth_time, now)
    return UNPROVEN_AUTH_TIME


def resumed_request(
    return_to: str | None, started_at: dt.datetime, policy: SignInPolicy
) -> ResumedRequest | None:
    """The application's authorization request a sign-in returns to (``return_to`` is the
    authorization endpoint's address), named in the session it issues with when the sign-in
    began: what lets that request, and only it, count the sign-in as its own."""
    if not return_to or not is_resume_url(return_to, policy.resume_urls):
        return None
    return ResumedRequest(resume_key(urlsplit(return_to).query), started_at)


def _refuse_disabled(verified: VerifiedIdentity, identity: LinkedIdentity) -> None:
    """The provider reported this identity disabled (RISC): refused until it is enabled."""
    if identity.disabled_reason is not None:
        security_log.warning(
            "security event: sign-in through disabled identity %s refused (%s)",
            verified.identity,
            identity.disabled_reason,
        )
        raise errors.IdentityDisabled(identity.disabled_reason)
