"""The records of sign-in and account linking (values; no behaviour that needs I/O)."""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from typing import Any

import attrs


class Intent(enum.Enum):
    """Why a sign-in was started (ARCHITECTURE: registration vs login)."""

    LOGIN = "login"
    REGISTER = "register"
    LINK = "link"
    REAUTHENTICATE = "reauthenticate"  # the caller signs in again (RFC 9470 step-up)


@attrs.frozen
class ProviderIdentity:
    """A user at a provider: the account key ``{provider}:{subject}`` (spec 2.8)."""

    provider: str
    subject: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.subject}"

    @property
    def provider_id(self) -> str:
        """The API's ``providerId``, ``user:{provider}:{subject}`` (spec 2.2)."""
        return f"{PROVIDER_ID_PREFIX}{self.provider}:{self.subject}"

    @classmethod
    def parse(cls, text: str) -> ProviderIdentity | None:
        """The identity written as a ``providerId`` or as ``PROVIDER:SUBJECT``; None for text
        that is neither. The ``providerId`` form is read first: a subject may hold colons, a
        provider name does not."""
        body = text.removeprefix(PROVIDER_ID_PREFIX) if text.count(":") >= 2 else text
        provider, colon, subject = body.partition(":")
        if not (colon and provider and subject):
            return None
        return cls(provider, subject)


PROVIDER_ID_PREFIX = "user:"


@attrs.frozen
class VerifiedIdentity:
    """What a provider vouched for after a verified code exchange."""

    identity: ProviderIdentity
    email: str | None = None
    email_verified: bool | None = None  # None: the provider did not say
    name: str | None = None
    profile: Mapping[str, Any] = attrs.field(factory=dict)
    provider_session: str | None = None  # the ID token's sid (OIDC back-channel logout)
    auth_time: dt.datetime | None = None  # when the provider authenticated the user, if said
    # The provider's token to revoke when the identity goes (kept encrypted, never shown);
    # only for a provider with a revocation endpoint.
    provider_token: ProviderToken | None = attrs.field(default=None, repr=False)


@attrs.frozen
class ProviderToken:
    """A token the provider issued to this service for a user, as its revocation endpoint
    takes it, with RFC 7009's ``token_type_hint``."""

    value: str = attrs.field(repr=False)
    hint: str


@attrs.frozen
class SealedToken:
    """A provider token encrypted at rest, with the id of the key that encrypted it."""

    key_id: str
    ciphertext: str = attrs.field(repr=False)


@attrs.frozen
class StoredProviderToken:
    """The sealed token kept for one identity of an account (one per account and provider)."""

    account_id: str
    identity: ProviderIdentity
    sealed: SealedToken
    updated_at: dt.datetime


@attrs.frozen
class PendingRevocation:
    """An outbox row (:class:`~authgate.ports.outbox.Pending`): a provider token to revoke
    once the change that dropped it committed."""

    id: str
    account_id: str
    identity: ProviderIdentity
    sealed: SealedToken
    created_at: dt.datetime
    next_attempt_at: dt.datetime
    attempts: int = 0


@attrs.frozen
class Account:
    """An account: its email is the primary identity's, as that provider gave it at creation."""

    id: str
    email: str | None
    name: str | None
    created_at: dt.datetime
    last_login_at: dt.datetime | None
    # True only when the provider said the address is verified (ports.accounts.email_verified_of).
    email_verified: bool = False


@attrs.frozen
class LinkedIdentity:
    """One provider identity held by an account (spec 2.2 without the wire format)."""

    account_id: str
    identity: ProviderIdentity
    email: str | None
    linked_at: dt.datetime
    is_primary: bool
    # True only when the provider said the address is verified (ports.accounts.email_verified_of).
    email_verified: bool = False
    # Set by the provider's events: why sign-in through it is refused (RISC account-disabled),
    # and whether the user turned off forwarding to their address (Apple's email-disabled).
    disabled_reason: str | None = None
    email_disabled: bool = False


@attrs.frozen
class PendingSignIn:
    """The server-side state of a started sign-in, taken once by its callback (spec 4.6.11)."""

    state: str
    provider: str
    redirect_uri: str
    intent: Intent
    code_verifier: str | None
    nonce: str | None
    binding_hash: str
    created_at: dt.datetime
    expires_at: dt.datetime
    return_to: str | None = None
    account_id: str | None = None  # the caller's account, for intent=link or reauthenticate
    # The caller's session that started it (link, reauthenticate): the callback completes only
    # while that session is live, so ending it cancels what it started.
    session_id: str | None = None


@attrs.frozen
class Authorization:
    """The answer to a sign-in initiation (spec 2.4)."""

    provider: str
    authorization_url: str
    client_id: str
    scopes: tuple[str, ...]
    response_type: str
    state: str
    state_max_age: int = 600  # seconds the pending sign-in (and its binding cookie) lives


class Outcome(enum.Enum):
    """Recorded outcomes: of a callback, and of the account changes audited like sign-ins."""

    SIGNED_IN = "signed_in"
    REGISTERED = "registered"
    LINKED = "linked"
    DENIED = "denied"
    FAILED = "failed"
    INVALID_STATE = "invalid_state"
    ACCOUNT_NOT_FOUND = "account_not_found"
    REAUTHENTICATED = "reauthenticated"
    UNLINKED = "unlinked"
    SESSION_REVOKED = "session_revoked"
    SIGNED_OUT = "signed_out"
    SIGNED_OUT_EVERYWHERE = "signed_out_everywhere"
    ACCOUNT_DELETED = "account_deleted"
    # What a provider told us about its user (Apple notifications, RISC, back-channel logout).
    PROVIDER_SIGNED_OUT = "provider_signed_out"  # sessions ended by the provider's event
    PROVIDER_UNLINKED = "provider_unlinked"  # the provider's identity removed by its event
    IDENTITY_DISABLED = "identity_disabled"
    IDENTITY_ENABLED = "identity_enabled"
    EMAIL_DISABLED = "email_disabled"
    EMAIL_ENABLED = "email_enabled"
    PROVIDER_EVENT = "provider_event"  # received and audited; nothing to change
    PROVIDER_EVENT_REJECTED = "provider_event_rejected"  # the token did not verify
    PROVIDER_TOKEN_REVOKED = "provider_token_revoked"  # noqa: S105 - an outcome name
    PROVIDER_TOKEN_REVOCATION_FAILED = "provider_token_revocation_failed"  # noqa: S105
    # What authgate as an OpenID Provider told its clients (back-channel logout).
    BACKCHANNEL_LOGOUT_SENT = "backchannel_logout_sent"
    BACKCHANNEL_LOGOUT_FAILED = "backchannel_logout_failed"
    APP_WITHDRAWN = "app_withdrawn"  # consent to an application withdrawn, its tokens revoked
    # Passkeys: added and removed (account changes); a sign-in refused because the signature
    # counter went backwards (a cloned authenticator).
    PASSKEY_ADDED = "passkey_added"
    PASSKEY_REMOVED = "passkey_removed"
    PASSKEY_COUNTER_REGRESSED = "passkey_counter_regressed"


@attrs.frozen
class SignInEvent:
    """An audited callback: when, who from where, with which provider, and how it ended."""

    at: dt.datetime
    provider: str
    outcome: Outcome
    client_address: str | None
    user_agent: str | None
    account_id: str | None = None
    detail: str | None = None


@attrs.frozen
class ClientInfo:
    """Where a request came from (for audit and rate limiting)."""

    address: str | None
    user_agent: str | None


@attrs.frozen
class Caller:
    """The signed-in caller of an account operation: whose session, from where."""

    account_id: str
    session_id: str
    provider: str
    auth_time: dt.datetime | None
    client: ClientInfo


@attrs.frozen
class SignedIn:
    """A completed callback: the account, whether it is new, where to send the browser."""

    account: Account
    provider: str
    first_time: bool
    destination: str
    session: IssuedSession
    outcome: Outcome
    session_max_age: int = 0  # seconds from now until the session expires (the cookie's)


# A session's ``auth_time`` when its sign-in proved no login time (the provider may have let
# its user through on a long-lived session of its own): so early that no change needing a
# recent sign-in (RFC 9470) accepts it, here or at a service reading the token's claim.
UNPROVEN_AUTH_TIME = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@attrs.frozen
class SessionRecord:
    """What the service keeps of a session it issued, never the token. ``id``: the token's
    ``sid`` (a renewed token keeps it). ``expires_at``: the newest token's expiry, never past
    ``absolute_expires_at``. ``auth_time``: the last login the provider proved (RFC 9470).
    ``provider_session``: the provider's ``sid``. ``passkey_id``: the passkey a passkey
    sign-in used (removing it ends the session)."""

    id: str
    account_id: str
    provider: str
    created_at: dt.datetime
    expires_at: dt.datetime
    absolute_expires_at: dt.datetime
    auth_time: dt.datetime
    client_address: str | None = None
    user_agent: str | None = None
    provider_session: str | None = None
    revoked_at: dt.datetime | None = None
    passkey_id: str | None = None

    def live(self, now: dt.datetime) -> bool:
        """Neither revoked nor expired at ``now``."""
        return self.revoked_at is None and now < self.expires_at


@attrs.frozen
class EventId:
    """A provider event's one-time identity, remembered until ``expires_at`` (past it, the
    event's ``iat`` is too old to be accepted anyway)."""

    issuer: str
    jti: str
    expires_at: dt.datetime


@attrs.frozen
class IssuedSession:
    """A session token minted by the service, its session's id and when the token expires."""

    token: str
    expires_at: dt.datetime
    session_id: str = ""
