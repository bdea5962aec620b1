"""The OAuth 2.0 Device Authorization Grant (RFC 8628): what authgate keeps of a device's
request while a person approves it on another screen, and its two codes.

The device code is 256 random bits the device polls with; the user code is eight letters
from :data:`USER_CODE_ALPHABET` (twenty consonants: no vowel spells a word, no letter looks
like a digit or another letter) that the person types, shown ``XXXX-XXXX``. Both are kept as
their digest only. A person's input is normalised (case, dashes, spaces) before it is
looked up."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterable
from typing import Literal

import attrs

from authgate.domain.openid.records import token_digest

USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
USER_CODE_LENGTH = 8
# RFC 8628 section 3.5: each slow_down adds five seconds to the interval.
SLOW_DOWN_SECONDS = 5
# What a typed code may hold besides its letters: the dash it is shown with and spaces.
_SEPARATORS = str.maketrans("", "", "- \t")

DeviceStatus = Literal["pending", "approved", "denied", "used"]
PENDING: DeviceStatus = "pending"
APPROVED: DeviceStatus = "approved"
DENIED: DeviceStatus = "denied"
USED: DeviceStatus = "used"


def new_user_code() -> str:
    """A random user code, normalised (eight letters, no dash): 20^8 (about 2.6e10, 34.5 bits)
    possible codes."""
    return "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))


def normalise_user_code(typed: str) -> str | None:
    """The user code a person typed, as stored (upper case, without dashes or spaces), or None
    when it cannot be one (wrong length, a letter outside the alphabet)."""
    code = typed.translate(_SEPARATORS).upper()
    if len(code) != USER_CODE_LENGTH or any(c not in USER_CODE_ALPHABET for c in code):
        return None
    return code


def shown_user_code(code: str) -> str:
    """A normalised user code as people see it: ``XXXX-XXXX``."""
    half = USER_CODE_LENGTH // 2
    return f"{code[:half]}-{code[half:]}"


def user_code_digest(code: str) -> str:
    """What is stored of a normalised user code."""
    return token_digest("user_code:" + code)


def _scope_tuple(scopes: Iterable[str]) -> tuple[str, ...]:
    return tuple(scopes)


@attrs.frozen
class DeviceAuthorization:
    """A device's request (RFC 8628 section 3.1) by the digests of its two codes: the
    client, the scopes asked, what became of it (``status``), the person who approved or
    denied it (account, session, when they authenticated), when it expires, when the device
    last polled and the interval it must keep between polls (seconds, grown by
    :data:`SLOW_DOWN_SECONDS` at each ``slow_down``)."""

    device_code_hash: str
    user_code_hash: str
    client_id: str
    scopes: tuple[str, ...] = attrs.field(converter=_scope_tuple)
    status: DeviceStatus
    created_at: dt.datetime
    expires_at: dt.datetime
    interval: int
    last_polled_at: dt.datetime | None = None
    account_id: str | None = None
    session_id: str | None = None
    auth_time: dt.datetime | None = None

    def live(self, now: dt.datetime) -> bool:
        """Not expired at ``now``."""
        return now < self.expires_at

    def polled_too_soon(self, now: dt.datetime) -> bool:
        """Whether a poll at ``now`` comes before the interval since the last one ended."""
        if self.last_polled_at is None:
            return False
        return now < self.last_polled_at + dt.timedelta(seconds=self.interval)
