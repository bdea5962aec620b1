"""Passkeys (WebAuthn credentials): a sign-in method of an account beside its linked providers.
The ceremonies themselves are a relying party's (:mod:`authgate.ports.webauthn`)."""

from __future__ import annotations

import datetime as dt
import enum

import attrs

from authgate.domain.errors import InvalidPasskeyName

# How long a challenge may be answered: the ceremony's timeout, and the most kept.
CHALLENGE_LIFETIME = dt.timedelta(minutes=5)
NAME_MAX = 64  # characters of a passkey's name


class Ceremony(enum.Enum):
    """Which ceremony a challenge was issued for: one's is never accepted by the other."""

    REGISTRATION = "registration"
    AUTHENTICATION = "authentication"


@attrs.frozen
class Passkey:
    """A public-key credential of an account. ``id`` is the API's, ``credential_id`` the
    authenticator's (unique across accounts). ``sign_count``: the counter last seen (0 for
    authenticators that keep none, as synced passkeys do); ``backup_eligible`` and
    ``backed_up``: the BE and BS flags. ``added_by_session`` and where it ran are kept here, as
    a session's record is purged once expired: the person sees where each passkey came from,
    and signing out everywhere else may remove those the ended sessions added."""

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
    """A challenge handed to one browser (``binding_hash``, as for a pending sign-in) for one
    ceremony; a registration's also names the account and session that asked for it."""

    binding_hash: str
    ceremony: Ceremony
    challenge: bytes = attrs.field(repr=False)
    created_at: dt.datetime
    expires_at: dt.datetime
    account_id: str | None = None
    session_id: str | None = None


@attrs.frozen
class PasskeyUser:
    """The account as the creation options name it to the authenticator (``handle``: the
    opaque WebAuthn user handle)."""

    handle: bytes
    name: str
    display_name: str


@attrs.frozen
class NewCredential:
    """The credential of a verified registration, as a :class:`Passkey` keeps it (``aaguid``:
    the authenticator model; ``transports``: the known values the browser reported, in its
    order, without repeats, at most 8)."""

    credential_id: bytes = attrs.field(repr=False)
    public_key: bytes = attrs.field(repr=False)
    sign_count: int
    aaguid: str
    backup_eligible: bool
    backed_up: bool
    transports: tuple[str, ...]


@attrs.frozen
class VerifiedAssertion:
    """What a verified assertion says of its passkey: its signature counter and BS flag."""

    sign_count: int
    backed_up: bool


def counter_advances(stored: int, seen: int) -> bool:
    """Whether an assertion's signature counter ``seen`` may follow the ``stored`` one: it went
    up, or both are 0 (an authenticator without a counter). Anything else is what a copy of
    the authenticator would report, or a replay."""
    return seen > stored or seen == stored == 0


def clean_name(name: str) -> str:
    """The name as kept (stripped); :class:`InvalidPasskeyName` when it is empty, too long or
    holds a control character."""
    text = name.strip()
    if not text or len(text) > NAME_MAX:
        raise InvalidPasskeyName(NAME_MAX)
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029" for c in text):
        raise InvalidPasskeyName(NAME_MAX)
    return text
