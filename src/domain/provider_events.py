"""What identity providers tell us about their users, read from a verified event token (its
signature, ``iss``, ``aud``, ``iat`` and ``jti`` checked by the adapters): OpenID Connect
Back-Channel Logout 1.0, Sign in with Apple server-to-server notifications, and Google's
Cross-Account Protection (RISC, RFC 8417). :func:`decide` says what each event means for the
account."""

from __future__ import annotations

import enum
import json
from collections.abc import Collection, Mapping
from typing import Any

import attrs

from authgate.domain.model import Outcome

BACKCHANNEL_LOGOUT = "http://schemas.openid.net/event/backchannel-logout"
RISC_EVENT_TYPE = "https://schemas.openid.net/secevent/risc/event-type/"
OAUTH_EVENT_TYPE = "https://schemas.openid.net/secevent/oauth/event-type/"
MAX_SUBJECT_LENGTH = 255
UNKNOWN = "unknown"  # the kind of an event type we do not act on


class MalformedEvent(ValueError):
    """The token verified but its event is not what its shape defines (RFC 8935
    ``invalid_request``). The text is log-safe and may be returned to the provider."""


class Action(enum.Enum):
    """What the service does about an event."""

    END_SESSIONS = "end_sessions"
    REMOVE_IDENTITY = "remove_identity"  # unlink it, or delete the account (a setting)
    DISABLE_IDENTITY = "disable_identity"  # revoke every session, refuse its sign-ins
    ENABLE_IDENTITY = "enable_identity"
    EMAIL_DISABLED = "email_disabled"
    EMAIL_ENABLED = "email_enabled"
    REVIEW = "review"  # audited and logged as a warning for an operator to follow up
    NOTHING = "nothing"  # audited and logged only


@attrs.frozen
class ProviderEvent:
    """One event about one user of the provider. ``kind``: its bounded name for the audit
    trail. ``subject``: the user's ``sub`` (None: a logout by ``sid`` alone, or RISC
    ``verification``). ``every_provider``: END_SESSIONS ends every session of the account, not
    only those signed in through this provider."""

    kind: str
    action: Action
    subject: str | None = None
    provider_session: str | None = None
    reason: str | None = None
    every_provider: bool = False


# -- OpenID Connect Back-Channel Logout 1.0, section 2.4 and 2.6 ------------------------------


def logout_event(claims: Mapping[str, Any]) -> ProviderEvent:
    """The logout of a verified logout token."""
    events = claims.get("events")
    if not isinstance(events, Mapping) or not isinstance(events.get(BACKCHANNEL_LOGOUT), Mapping):
        raise MalformedEvent(f"logout token events claim has no {BACKCHANNEL_LOGOUT} object")
    if "nonce" in claims:
        raise MalformedEvent("logout token carries a nonce (an ID token?)")
    sub = _optional_text(claims, "sub")
    sid = _optional_text(claims, "sid")
    if sub is None and sid is None:
        raise MalformedEvent("logout token has neither sub nor sid")
    return ProviderEvent("backchannel-logout", Action.END_SESSIONS, sub, sid)


# -- Sign in with Apple server-to-server notifications ----------------------------------------

APPLE_ACTIONS: Mapping[str, Action] = {
    "consent-revoked": Action.REMOVE_IDENTITY,
    "account-delete": Action.REMOVE_IDENTITY,
    "account-deleted": Action.REMOVE_IDENTITY,  # the spelling of some of Apple's pages
    "email-disabled": Action.EMAIL_DISABLED,
    "email-enabled": Action.EMAIL_ENABLED,
}


def apple_event(claims: Mapping[str, Any]) -> ProviderEvent:
    """The event of a verified Apple notification; an unknown ``type`` is Action.NOTHING."""
    raw = claims.get("events")
    if isinstance(raw, str):  # what Apple sends: the event object as a JSON string
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            raise MalformedEvent("notification events claim is not JSON") from None
    else:
        event = raw
    if not isinstance(event, Mapping):
        raise MalformedEvent("notification events claim is not a JSON object")
    kind = event.get("type")
    if not isinstance(kind, str) or not kind:
        raise MalformedEvent("notification event has no type")
    sub = _optional_text(event, "sub")
    if sub is None:
        raise MalformedEvent("notification event has no sub")
    if kind not in APPLE_ACTIONS:
        return ProviderEvent(UNKNOWN, Action.NOTHING, sub)
    return ProviderEvent(kind, APPLE_ACTIONS[kind], sub)


# -- RISC (Google Cross-Account Protection) ---------------------------------------------------

# Every event type of Google's Cross-Account Protection, as its documentation asks a receiver
# to act on it (account-disabled: end the sessions on hijacking, disable sign-in through
# Google without a reason, look into the user's activity on bulk-account).
RISC_ACTIONS: Mapping[str, Action] = {
    RISC_EVENT_TYPE + "sessions-revoked": Action.END_SESSIONS,
    OAUTH_EVENT_TYPE + "tokens-revoked": Action.END_SESSIONS,
    OAUTH_EVENT_TYPE + "token-revoked": Action.NOTHING,  # names a token, not a user
    RISC_EVENT_TYPE + "account-disabled": Action.DISABLE_IDENTITY,
    RISC_EVENT_TYPE + "account-enabled": Action.ENABLE_IDENTITY,
    RISC_EVENT_TYPE + "account-credential-change-required": Action.REVIEW,
    RISC_EVENT_TYPE + "verification": Action.NOTHING,
}
# account-disabled reasons that do not disable sign-in: Google disabled the account for bulk
# (abusive) creation, which says nothing about who holds our sessions.
REVIEW_REASONS = frozenset({"bulk-account"})
MAX_REASON_LENGTH = 64


def risc_events(claims: Mapping[str, Any], issuers: Collection[str]) -> list[ProviderEvent]:
    """The events of a verified Security Event Token (RFC 8417 section 2.2). The subject
    (``iss_sub``, RFC 9493; Google writes ``iss-sub`` and its issuer with a trailing slash)
    must name one of ``issuers``, else the event acts on nobody. Unknown types are
    Action.NOTHING, never an error."""
    events = claims.get("events")
    if not isinstance(events, Mapping) or not events:
        raise MalformedEvent("security event token has no events object")
    found: list[ProviderEvent] = []
    for uri, payload in events.items():
        if not isinstance(payload, Mapping):
            raise MalformedEvent("security event payload is not a JSON object")
        action = RISC_ACTIONS.get(uri)
        if action is None:
            found.append(ProviderEvent(UNKNOWN, Action.NOTHING))
            continue
        name = uri.rsplit("/", 1)[-1]
        raw_subject = payload.get("subject", claims.get("sub_id"))
        subject = _risc_subject(raw_subject, issuers)
        reason = payload.get("reason")
        if action is Action.DISABLE_IDENTITY:
            reason = reason[:MAX_REASON_LENGTH] if isinstance(reason, str) and reason else None
            if reason in REVIEW_REASONS:
                action = Action.REVIEW
        elif name == "token-revoked":
            reason = _token_kind(raw_subject)
        else:
            reason = None
        if subject is None and action not in (Action.NOTHING, Action.REVIEW):
            action = Action.NOTHING
        found.append(ProviderEvent(name, action, subject, reason=reason, every_provider=True))
    return found


def _token_kind(subject: Any) -> str | None:
    """The ``token_type`` of a token-revoked event's ``oauth_token`` subject."""
    if not isinstance(subject, Mapping) or subject.get("subject_type") != "oauth_token":
        return None
    kind = subject.get("token_type")
    return kind[:MAX_REASON_LENGTH] if isinstance(kind, str) and kind.isprintable() else None


def _risc_subject(subject: Any, issuers: Collection[str]) -> str | None:
    if not isinstance(subject, Mapping):
        return None
    kind = subject.get("subject_type", subject.get("format"))
    if kind not in ("iss_sub", "iss-sub"):
        return None
    iss = subject.get("iss")
    wanted = {i.rstrip("/") for i in issuers}
    if not isinstance(iss, str) or iss.rstrip("/") not in wanted:
        return None
    return _optional_text(subject, "sub")


# -- What an event means ----------------------------------------------------------------------


class Ending(enum.Enum):
    """Which sessions of the account an event ends."""

    NONE = "none"
    THIS_PROVIDER = "this_provider"  # those signed in through the event's provider
    EVERY_PROVIDER = "every_provider"  # all of the account's, whatever the provider
    PROVIDER_SESSION = "provider_session"  # those of the provider session it names (``sid``)


class KeptToken(enum.Enum):
    """What becomes of the provider's token kept for the account (for revocation)."""

    KEEP = "keep"
    DROP = "drop"  # the provider revoked it already: sending it back is useless
    REVOKE = "revoke"  # it may be an attacker's grant: queue its revocation at the provider


@attrs.frozen
class Audit:
    """One audit event to record: its outcome, the account it concerns, and its detail."""

    outcome: Outcome
    account_id: str | None
    detail: str


@attrs.frozen
class Decision:
    """What one event means, carried out in one transaction without knowing event kinds.
    ``needs_account``: it acts on the account holding the identity it names (else it is
    audited as an unknown subject). ``disable_identity``: refuse its sign-ins for that reason;
    ``email_disabled``: relay email off (True) or on (False). ``outcome``/``detail``: the audit
    event, with ``counted`` recorded per account whose sessions ended, with how many.
    ``review``: logged as a warning for an operator."""

    kind: str
    outcome: Outcome
    detail: str
    needs_account: bool = True
    ending: Ending = Ending.NONE
    disable_identity: str | None = None
    enable_identity: bool = False
    email_disabled: bool | None = None
    kept_token: KeptToken = KeptToken.KEEP
    counted: bool = False
    review: bool = False
    unrecognised: bool = False

    def unknown_subject(self) -> Audit:
        """The audit of an event naming nobody we know: nothing was changed."""
        return Audit(Outcome.PROVIDER_EVENT, None, f"{self.kind}: unknown subject")

    def audits(
        self, account_id: str | None, ended: Mapping[str, int], token_dropped: bool = False
    ) -> list[Audit]:
        """The audit events once carried out for ``account_id`` (None: nobody known); ``ended``
        counts the sessions ended by account."""
        if not self.counted:
            return [Audit(self.outcome, account_id, self.detail)]
        if not ended:
            return [Audit(Outcome.PROVIDER_EVENT, None, f"{self.detail}: no live session")]
        dropped = "; kept token dropped" if token_dropped else ""
        return [
            Audit(self.outcome, holder, f"{self.detail}: {count}{dropped}")
            for holder, count in sorted(ended.items())
        ]


# Google disabled the account because it may have been taken over: whoever holds a session may
# be the attacker, whatever provider it was signed in with, and the kept token may be the
# attacker's grant.
HIJACKING = "hijacking"
# The provider revoked the OAuth tokens it issued to us: the one kept is useless now.
TOKENS_REVOKED = "tokens-revoked"


def decide(event: ProviderEvent) -> Decision:
    """What ``event`` means for the account holding the identity it names."""
    kind = event.kind
    action = event.action
    if action is Action.END_SESSIONS:
        return _end_sessions(event)
    if action in (Action.NOTHING, Action.REVIEW):
        return Decision(
            kind,
            Outcome.PROVIDER_EVENT,
            f"{kind}: {event.reason}" if event.reason else kind,
            needs_account=False,
            review=action is Action.REVIEW,
            unrecognised=kind == UNKNOWN,
        )
    if action is Action.DISABLE_IDENTITY:
        return _disable_identity(event)
    if action is Action.ENABLE_IDENTITY:
        return Decision(kind, Outcome.IDENTITY_ENABLED, kind, enable_identity=True)
    if action is Action.EMAIL_DISABLED:
        return Decision(kind, Outcome.EMAIL_DISABLED, kind, email_disabled=True)
    if action is Action.EMAIL_ENABLED:
        return Decision(kind, Outcome.EMAIL_ENABLED, kind, email_disabled=False)
    # REMOVE_IDENTITY arrives alone in a token and goes through the account service.
    return Decision(kind, Outcome.PROVIDER_EVENT, kind)


def _end_sessions(event: ProviderEvent) -> Decision:
    """A logout, or a provider's word that its sessions (or tokens) are over."""
    kind = event.kind
    if event.provider_session is not None:
        # A logout by sid ends that provider session; with a sub, only if it is the holder's.
        return Decision(
            kind,
            Outcome.PROVIDER_SIGNED_OUT,
            kind,
            needs_account=event.subject is not None,
            ending=Ending.PROVIDER_SESSION,
            counted=True,
        )
    return Decision(
        kind,
        Outcome.PROVIDER_SIGNED_OUT,
        kind,
        ending=Ending.EVERY_PROVIDER if event.every_provider else Ending.THIS_PROVIDER,
        kept_token=KeptToken.DROP if kind == TOKENS_REVOKED else KeptToken.KEEP,
        counted=True,
    )


def _disable_identity(event: ProviderEvent) -> Decision:
    """The provider disabled the identity: on a hijacking every session ends and the kept
    token is revoked; otherwise only the sessions this provider vouched for end."""
    reason = event.reason or "unspecified"
    hijacked = reason == HIJACKING
    return Decision(
        event.kind,
        Outcome.IDENTITY_DISABLED,
        f"{event.kind}: {reason}",
        ending=Ending.EVERY_PROVIDER if hijacked else Ending.THIS_PROVIDER,
        disable_identity=reason,
        kept_token=KeptToken.REVOKE if hijacked else KeptToken.KEEP,
    )


def _optional_text(values: Mapping[str, Any], name: str) -> str | None:
    value = values.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_SUBJECT_LENGTH:
        raise MalformedEvent(f"{name} is not a string of 1 to {MAX_SUBJECT_LENGTH} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise MalformedEvent(f"{name} has control characters")
    return value
