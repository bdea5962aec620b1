"""Passkeys: adding one to the signed-in account, signing in with one (as a provider's sign-in
does), managing them. The ceremonies are the relying party's
(:class:`~authgate.ports.webauthn.WebAuthnRelyingParty`); the rest is this service's.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
import time
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from authgate.domain import errors
from authgate.domain.model import (
    Caller,
    ClientInfo,
    IssuedSession,
    Outcome,
    SessionRecord,
)
from authgate.domain.passkeys import (
    CHALLENGE_LIFETIME,
    Ceremony,
    Passkey,
    PasskeyChallenge,
    PasskeyUser,
    clean_name,
    counter_advances,
)
from authgate.domain.redirects import is_resume_url, safe_return_to
from authgate.domain.secrets import binding_hash
from authgate.domain.text import printable
from authgate.ports.accounts import AccountRepository, LastIdentityError
from authgate.ports.clock import Clock
from authgate.ports.events import SignInEventLog
from authgate.ports.metrics import Metrics
from authgate.ports.passkeys import (
    ChallengeStoreFull,
    PasskeyChallenges,
    PasskeyStore,
    PasskeyTaken,
    PasskeyUseNotRecorded,
)
from authgate.ports.session_tokens import InvalidSession
from authgate.ports.unit_of_work import Transaction, UnitOfWork
from authgate.ports.webauthn import (
    ReadAssertion,
    ResponseMalformed,
    ResponseNotVerified,
    WebAuthnRelyingParty,
)
from authgate.services.audit import (
    audit_event,
    log_event,
    or_no_metrics,
    record_audit,
    record_refusal,
    security_log,
)
from authgate.services.sessions import SessionService
from authgate.services.signin import (
    SignInPolicy,
    error_detail,
    error_kind,
    resumed_request,
    session_max_age,
)

log = logging.getLogger("authgate.passkeys")

PASSKEY_PROVIDER = "passkey"
"""The provider a passkey sign-in names: in its session (the token's ``provider`` claim, the
sessions list), its audit events and its metrics."""

DEFAULT_NAME = "Passkey"


@attrs.frozen
class PasskeyPolicy:
    """``passkeys.*`` of the service: the ceremonies' timeouts (at most
    :data:`CHALLENGE_LIFETIME`, which is also how long a challenge lives). The relying party
    (RP ID, name, origins) is the :class:`WebAuthnRelyingParty`'s."""

    registration_timeout: dt.timedelta = CHALLENGE_LIFETIME
    authentication_timeout: dt.timedelta = CHALLENGE_LIFETIME


@attrs.frozen
class PasskeySignedIn:
    """A verified passkey sign-in: its session and where the browser goes next."""

    account_id: str
    passkey: Passkey
    session: IssuedSession
    destination: str
    session_max_age: int


@attrs.define(eq=False, repr=False, slots=False, kw_only=True)
class PasskeyService:
    """The passkey ceremonies and the account's passkeys; raises the domain's errors."""

    passkeys: PasskeyStore
    challenges: PasskeyChallenges
    accounts: AccountRepository
    events: SignInEventLog
    units: UnitOfWork
    sessions: SessionService
    clock: Clock
    relying_party: WebAuthnRelyingParty
    policy: PasskeyPolicy
    signin: SignInPolicy
    metrics: Metrics = attrs.field(default=None, converter=or_no_metrics)

    @functools.cached_property
    def _dashboard_resumes(self) -> bool:
        """Whether the dashboard, where a sign-in without ``returnTo`` goes, is an
        application's authorization request (never, as configured: read once, not per
        sign-in)."""
        return is_resume_url(self.signin.dashboard_url, self.signin.resume_urls)

    # -- adding a passkey -----------------------------------------------------------------

    async def registration_options(self, caller: Caller, binding: str) -> dict[str, Any]:
        """WebAuthn creation options (the JSON form) for the caller's account, their challenge
        kept for this browser; a recent sign-in needed, as for linking a provider."""
        await self._require_recent_sign_in(caller)
        account = await self.accounts.get(caller.account_id)
        if account is None:
            raise errors.AccountGone()
        existing = await self.passkeys.for_account(account.id)
        challenge = await self._new_challenge(
            binding, Ceremony.REGISTRATION, caller.account_id, caller.session_id
        )
        options = self.relying_party.creation_options(
            PasskeyUser(
                handle=user_handle(account.id),
                name=account.email or f"authgate account {account.id[:8]}",
                display_name=account.name or account.email or "authgate account",
            ),
            existing,
            challenge,
        )
        return {**options, "timeout": _milliseconds(self.policy.registration_timeout)}

    async def _require_recent_sign_in(self, caller: Caller) -> None:
        """:meth:`SessionService.require_recent_sign_in`: an account with no way to prove a
        login may still add its first passkey, the only way it can ever gain one."""
        async with self.units.begin() as tx:
            await self.sessions.require_recent_sign_in(tx, caller)

    async def register(
        self,
        caller: Caller,
        binding: str | None,
        response: Mapping[str, Any],
        name: str | None = None,
    ) -> Passkey:
        """Verify the browser's answer to this browser's registration challenge and keep the
        passkey, in one unit of work with its audit event. The challenge must have been
        issued to the caller's session; the session ends nothing."""
        await self._require_recent_sign_in(caller)
        kept_name = DEFAULT_NAME if name is None else clean_name(name)
        now = self.clock.now()
        challenge = await self._take(binding, Ceremony.REGISTRATION, now)
        if challenge.account_id != caller.account_id or challenge.session_id != caller.session_id:
            raise errors.InvalidPasskeyChallenge("issued to another session")
        try:
            credential = self.relying_party.verify_registration(response, challenge.challenge)
        except ResponseMalformed as e:
            raise errors.InvalidPasskeyResponse(e.detail) from e
        except ResponseNotVerified as e:
            raise errors.PasskeyNotVerified(e.reason) from e
        passkey = Passkey(
            id=uuid.uuid4().hex,
            account_id=caller.account_id,
            **attrs.asdict(credential, recurse=False),  # kept as the relying party verified it
            name=kept_name,
            created_at=now,
            added_by_session=caller.session_id or None,
            added_from_address=printable(caller.client.address, 64),
            added_from_user_agent=printable(caller.client.user_agent, 512),
        )
        try:
            async with self.units.begin() as tx:
                await tx.passkeys.add(passkey)
                outcome = Outcome.PASSKEY_ADDED
                await record_audit(
                    tx, now, PASSKEY_PROVIDER, outcome, caller.client, caller.account_id, passkey.id
                )
        except PasskeyTaken:
            raise errors.PasskeyAlreadyRegistered() from None
        except KeyError:  # the account was deleted meanwhile
            raise errors.AccountGone() from None
        return passkey

    # -- signing in -----------------------------------------------------------------------

    async def authentication_options(self, binding: str) -> dict[str, Any]:
        """WebAuthn request options with an empty ``allowCredentials`` (the browser offers
        the passkeys it holds for this RP, also through autofill), their challenge kept for
        this browser."""
        challenge = await self._new_challenge(binding, Ceremony.AUTHENTICATION, None, None)
        return {
            **self.relying_party.request_options(challenge),
            "timeout": _milliseconds(self.policy.authentication_timeout),
        }

    async def authenticate(
        self,
        binding: str | None,
        response: Mapping[str, Any],
        client: ClientInfo,
        return_to: str | None = None,
        held_session: str | None = None,
    ) -> PasskeySignedIn:
        """Verify the browser's assertion against this browser's authentication challenge
        and sign in as a provider sign-in does (``held_session``: the browser's session token,
        proven anew when it is the same account's: :meth:`SessionService.prove`), with
        ``auth_time`` the moment of the verified assertion. Every refusal is audited and
        changes nothing but the challenge it used."""
        started = time.perf_counter()
        try:
            now = self.clock.now()
            challenge = await self._take(binding, Ceremony.AUTHENTICATION, now)
            try:
                assertion = self.relying_party.read_assertion(response)
            except ResponseMalformed as e:
                raise errors.InvalidPasskeyResponse(e.detail) from e
            policy = self.signin
            safe = safe_return_to(return_to, policy.app_url, policy.resume_urls)
            destination = policy.destination(safe)
            counter: int | None = None
            try:
                async with self.units.begin() as tx:
                    passkey, counter = await self._use(tx, assertion, challenge, now)
                    await tx.accounts.record_login(passkey.account_id, now)
                    resumes = (
                        resumed_request(destination, challenge.created_at, policy)
                        if safe is not None or self._dashboard_resumes
                        else None  # the dashboard, which resumes no request
                    )
                    started_by = await self._browsers_session(
                        tx, held_session, passkey.account_id, now
                    )
                    if started_by is not None:
                        # A step-up in a browser signed in to the same account: one browser, one
                        # session, with the newer proof of login.
                        session = await self.sessions.prove(tx, started_by, now, resumes=resumes)
                    else:
                        session = await self.sessions.issue(
                            tx,
                            passkey.account_id,
                            PASSKEY_PROVIDER,
                            client,
                            auth_time=now,
                            resumes=resumes,
                            passkey_id=passkey.id,
                        )
                    event = await record_audit(
                        tx,
                        now,
                        PASSKEY_PROVIDER,
                        Outcome.SIGNED_IN,
                        client,
                        passkey.account_id,
                        passkey.id,
                        logged=False,
                    )
            except PasskeyUseNotRecorded:  # found at the unit's end: nothing of it written
                assert counter is not None  # the use was asked for
                raise await self._use_not_recorded(assertion, counter) from None
            log_event(event)
            signed_in = PasskeySignedIn(
                account_id=passkey.account_id,
                passkey=passkey,
                session=session,
                destination=destination,
                session_max_age=session_max_age(session, now),
            )
        except errors.SignInError as e:
            await self._refused(e, client)
            raise
        finally:
            self.metrics.callback_duration(PASSKEY_PROVIDER, time.perf_counter() - started)
        self.metrics.sign_in(PASSKEY_PROVIDER, Outcome.SIGNED_IN.value, "none")
        self.metrics.sessions_issued(PASSKEY_PROVIDER)
        return signed_in

    async def _refused(self, e: errors.SignInError, client: ClientInfo) -> None:
        account_id: str | None = getattr(e, "account_id", None)
        reason = error_kind(e)
        if isinstance(e, _Cloned):
            security_log.warning(
                "security event: passkey %s of account %s signed with counter %d after %d: "
                "the authenticator may have been cloned; refused",
                e.passkey.id,
                e.passkey.account_id,
                e.counter,
                e.passkey.sign_count,
            )
            outcome = Outcome.PASSKEY_COUNTER_REGRESSED
            reason = outcome.value
            detail = f"passkey {e.passkey.id}: counter {e.counter} after {e.passkey.sign_count}"
        elif isinstance(e, errors.InvalidPasskeyChallenge):
            outcome, detail = Outcome.INVALID_STATE, e.detail
        else:
            outcome, detail = Outcome.FAILED, error_detail(e)
        self.metrics.sign_in(PASSKEY_PROVIDER, Outcome.FAILED.value, reason)
        event = audit_event(self.clock.now(), PASSKEY_PROVIDER, outcome, client, account_id, detail)
        await record_refusal(self.events, event, log, "a passkey sign-in event")

    async def _use(
        self,
        tx: Transaction,
        assertion: ReadAssertion,
        challenge: PasskeyChallenge,
        now: dt.datetime,
    ) -> tuple[Passkey, int]:
        """Inside ``tx``: the passkey that signed ``assertion``, verified against the
        challenge, its account not disabled, and its use (the new counter, returned) recorded
        (or, in a unit that sends its writes together, to be checked at its end)."""
        found = await tx.passkeys.find_for_sign_in(assertion.credential_id)
        if found is None:
            raise errors.UnknownPasskey()
        passkey, account_disabled = found
        _check_user_handle(assertion, passkey)
        try:
            verified = self.relying_party.verify_assertion(assertion, challenge.challenge, passkey)
        except ResponseNotVerified as e:
            raise errors.PasskeyNotVerified(e.reason, passkey.account_id) from e
        except ResponseMalformed as e:
            raise errors.InvalidPasskeyResponse(e.detail) from e
        counter = verified.sign_count
        if not counter_advances(passkey.sign_count, counter):
            raise _Cloned(passkey, counter)
        if account_disabled:  # read with the passkey; the identity named is read now
            await _refuse_disabled(tx, passkey)
        # The check above read the counter; this write decides, atomically: of concurrent
        # sign-ins with one counter value (a clone racing the original), one records it.
        if not await tx.passkeys.record_use(passkey.id, counter, verified.backed_up, now):
            raise await self._use_not_recorded(assertion, counter, tx.passkeys)
        return passkey, counter

    async def _use_not_recorded(
        self, assertion: ReadAssertion, counter: int, passkeys: PasskeyStore | None = None
    ) -> errors.SignInError:
        """The refusal of a sign-in whose use of the passkey was not recorded: its counter
        did not advance past the one now kept (a clone), or the passkey is gone."""
        current = await (passkeys or self.passkeys).find_by_credential(assertion.credential_id)
        if current is None:
            return errors.UnknownPasskey()
        return _Cloned(current, counter)

    async def _browsers_session(
        self, tx: Transaction, token: str | None, account_id: str, now: dt.datetime
    ) -> SessionRecord | None:
        """The live session of ``account_id`` that the browser signing in holds already (its
        session ``token``), if any."""
        if not token:
            return None
        try:
            claims = await self.sessions.verify(token)
        except InvalidSession:
            return None
        if claims.account_id != account_id or not claims.session_id:
            return None
        record = await tx.sessions.get(claims.session_id, for_change=True)
        if record is None or record.account_id != account_id or not record.live(now):
            return None
        return record

    # -- the account's passkeys -----------------------------------------------------------

    async def list(self, account_id: str) -> list[Passkey]:
        return await self.passkeys.for_account(account_id)

    async def rename(self, caller: Caller, passkey_id: str, name: str) -> Passkey:
        renamed = await self.passkeys.rename(caller.account_id, passkey_id, clean_name(name))
        if renamed is None:
            raise errors.PasskeyNotFound()
        return renamed

    async def remove(self, caller: Caller, passkey_id: str) -> None:
        """Remove one of the caller's passkeys and end the sessions it signed in (but the
        caller's own), as unlinking a provider does, in one unit of work with its audit
        event. A recent sign-in. Never the account's last sign-in method
        (:class:`~errors.LastSignInMethod`)."""
        self.sessions.require_recent_authentication(caller.auth_time)
        now = self.clock.now()
        try:
            async with self.units.begin() as tx:
                ended = await remove_passkey_in(
                    self.sessions, tx, caller, passkey_id, now, keep=caller.session_id
                )
        except LastIdentityError:
            raise errors.LastSignInMethod() from None
        if ended is None:
            raise errors.PasskeyNotFound()
        await self.sessions.announce(ended)

    # -- challenges -----------------------------------------------------------------------

    async def _new_challenge(
        self, binding: str, ceremony: Ceremony, account_id: str | None, session_id: str | None
    ) -> bytes:
        now = self.clock.now()
        value = os.urandom(32)
        try:
            await self.challenges.put(
                PasskeyChallenge(
                    binding_hash=binding_hash(binding),
                    ceremony=ceremony,
                    challenge=value,
                    created_at=now,
                    expires_at=now + CHALLENGE_LIFETIME,
                    account_id=account_id,
                    session_id=session_id,
                )
            )
        except ChallengeStoreFull:
            log.warning("passkey challenges at capacity: options refused")
            raise errors.TemporarilyUnavailable() from None
        return value

    async def _take(
        self, binding: str | None, ceremony: Ceremony, now: dt.datetime
    ) -> PasskeyChallenge:
        if not binding:
            raise errors.InvalidPasskeyChallenge("binding cookie absent")
        challenge = await self.challenges.take(binding_hash(binding), ceremony, now)
        if challenge is None:
            raise errors.InvalidPasskeyChallenge(f"no {ceremony.value} challenge for this browser")
        return challenge


class _Cloned(errors.PasskeyNotVerified):
    """The signature counter went backwards (or stood still): audited, then refused."""

    def __init__(self, passkey: Passkey, counter: int) -> None:
        self.passkey = passkey
        self.counter = counter
        super().__init__(
            "the signature counter went backwards: the authenticator may have been cloned",
            passkey.account_id,
        )


async def remove_passkey_in(
    sessions: SessionService,
    tx: Transaction,
    caller: Caller,
    passkey_id: str,
    now: dt.datetime,
    *,
    keep: str | None,
    detail: str | None = None,
) -> list[str] | None:
    """Inside ``tx``: remove the caller's passkey, end the sessions it signed in (but
    ``keep``) and record the audit event; the sessions ended, None when the account has no
    such passkey. Raises LastIdentityError for the last sign-in method. The one place of a
    passkey's removal, whether its owner asked for it alone or with signing out everywhere
    else."""
    if not await tx.passkeys.delete(caller.account_id, passkey_id):
        return None
    ended = await sessions.revoke_all_in(
        tx, caller.account_id, now, keep=keep, passkey_id=passkey_id
    )
    await record_audit(
        tx,
        now,
        PASSKEY_PROVIDER,
        Outcome.PASSKEY_REMOVED,
        caller.client,
        caller.account_id,
        f"{passkey_id}: {detail}" if detail else passkey_id,
    )
    return ended


def _check_user_handle(assertion: ReadAssertion, passkey: Passkey) -> None:
    """A discoverable sign-in (no allowCredentials): the authenticator must name the user it
    holds the credential for, and that user must be the passkey's account."""
    handle = assertion.user_handle
    if handle is None:
        raise errors.PasskeyNotVerified(
            "the authenticator returned no user handle", passkey.account_id
        )
    if handle != user_handle(passkey.account_id):
        raise errors.PasskeyNotVerified(
            "the user handle is not the passkey's account's", passkey.account_id
        )


async def _refuse_disabled(tx: Transaction, passkey: Passkey) -> None:
    """A provider reported one of the account's identities disabled (RISC): the account's
    passkeys sign nobody in either until it is enabled."""
    identities = await tx.accounts.list_identities(passkey.account_id)
    disabled = next((i for i in identities if i.disabled_reason is not None), None)
    if disabled is not None:
        security_log.warning(
            "security event: passkey sign-in to account %s refused: its identity %s "
            "is disabled (%s)",
            passkey.account_id,
            disabled.identity,
            disabled.disabled_reason,
        )
        raise errors.AccountDisabled(disabled.disabled_reason or "disabled", passkey.account_id)


def user_handle(account_id: str) -> bytes:
    """The WebAuthn user handle of an account: its id (opaque, no personal data)."""
    return account_id.encode()


def _milliseconds(delta: dt.timedelta) -> int:
    return int(delta.total_seconds() * 1000)
