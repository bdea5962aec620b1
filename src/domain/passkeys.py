"""Passkeys (WebAuthn credentials): a sign-in method of an account beside its linked providers.

Values only. The WebAuthn ceremonies themselves (options, verifying a browser's response) are
the work of a relying party (:mod:`authgate.ports.webauthn`) that
:mod:`authgate.services.passkeys` drives; what is kept is what a later sign-in needs to verify
an assertion (the credential id and COSE public key, the signature counter) and what the
person sees when managing them (name, times, backed up or not).
"""

from __future__ import annotations

import datetime as dt
import enum

import attrs

CHALLENGE_LIFETIME = dt.timedelta(minutes=5)
"""How long a challenge may be answered: the ceremony's timeout, and the most kept."""

NAME_MAX = 64
"""The longest name a passkey may be given (characters)."""


class Ceremony(enum.Enum):
    """Which WebAuthn ceremony a challenge was issued for: a challenge of one is never
    accepted by the other."""

    REGISTRATION = "registration"
    AUTHENTICATION = "authentication"


@attrs.frozen
class Passkey:
    """A public-key credential of an account.

    ``id`` is this service's name for it (the API's ``{id}``); ``credential_id`` is the
    authenticator's (up to 1,023 bytes, unique across accounts); ``public_key`` the COSE key
    the authenticator gave at registration. ``sign_count`` is the signature counter last seen
    (0 for authenticators that keep none, as synced passkeys do). ``backup_eligible`` and
    ``backed_up`` are the authenticator data's BE and BS flags: may it be synced, is it.

    ``added_by_session`` is the session that added it, ``added_from_address`` and
    ``added_from_user_agent`` where that session ran (kept here: a session's record is purged
    once it expired): the person sees where each passkey came from, and signing out everywhere
    else may remove the passkeys the ended sessions added. None for passkeys kept before
    they were recorded."""

    id: str
    account_id: str
    credential_id: bytes = attrs.field(repr=False)
    public_key: bytes = attrs.field(repr=False)
    sign_count: int
    transports: tuple[str, ...]
    aaguid: str
    backup_eligible: bool
    backed_up: bool
    name: str
    created_at: dt.datetime
    last_used_at: dt.datetime | None = None
    added_by_session: str | None = None
    added_from_address: str | None = None
    added_from_user_agent: str | None = None


@attrs.frozen
class PasskeyChallenge:
    """A challenge handed to one browser for one ceremony, kept until answered or expired.

    ``binding_hash`` is the SHA-256 of the browser's binding cookie (as for a pending
    sign-in): a response from another browser finds no challenge. A registration challenge
    also names the account and the session that asked for it."""

    binding_hash: str
    ceremony: Ceremony
    challenge: bytes = attrs.field(repr=False)
    created_at: dt.datetime
    expires_at: dt.datetime
    account_id: str | None = None
    session_id: str | None = None


@attrs.frozen
class PasskeyUser:
    """The account as the creation options name it to the authenticator: ``handle`` is the
    WebAuthn user handle (opaque bytes), ``name`` and ``display_name`` what the device shows
    when offering the passkey."""

    handle: bytes
    name: str
    display_name: str


@attrs.frozen
class NewCredential:
    """The credential of a verified registration, as a :class:`Passkey` keeps it: the
    authenticator's credential id, its COSE public key (CBOR), its signature counter, AAGUID
    (the authenticator model, a UUID's text), the BE and BS flags, and the transports the
    browser reported (the known values, in its order, without repeats, at most 8)."""

    credential_id: bytes = attrs.field(repr=False)
    public_key: bytes = attrs.field(repr=False)
    sign_count: int
    aaguid: str
    backup_eligible: bool
    backed_up: bool
    transports: tuple[str, ...]


@attrs.frozen
class VerifiedAssertion:
    """What a verified assertion says of its passkey: the authenticator's signature counter
    (0 when it keeps none) and whether the credential is backed up (BS flag) now."""

    sign_count: int
    backed_up: bool


def counter_advances(stored: int, seen: int) -> bool:
    """Whether an assertion's signature counter ``seen`` may follow the ``stored`` one: it
    went up, or both are 0 (an authenticator that keeps no counter, as synced passkeys do,
    always reports 0). Anything else (behind, or the same non-zero value) is what a copy of
    the authenticator would report, or a replay."""
    return seen > stored or seen == stored == 0


def clean_name(name: str) -> str | None:
    """The name as kept (surrounding white space dropped), or None when it is empty, longer
    than :data:`NAME_MAX` or holds a control character."""
    text = name.strip()
    if not text or len(text) > NAME_MAX:
        return None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029" for c in text):
        return None
    return text
