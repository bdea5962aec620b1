"""What the two SQL stores (SQLite and PostgreSQL) share: the same tables, so the same names,
columns and row layouts, kept here once. Only how a time is kept differs (ISO text in SQLite, a
``timestamptz`` in PostgreSQL): each store passes its own conversions, ``write`` for a value
it sends and ``read`` for a value it reads back.

A row read back is indexed by position, in the order of its columns here (an asyncpg record
and a SQLite row both are)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any, Literal, Protocol

from authgate.domain.model import (
    PendingRevocation,
    ProviderIdentity,
    SealedToken,
    StoredProviderToken,
)
from authgate.domain.openid.logout import PendingLogout

WriteTime = Callable[[dt.datetime], object]
ReadTime = Callable[[Any], dt.datetime]


class Row(Protocol):
    """A row as a store reads it back: its values by position."""

    def __getitem__(self, index: int, /) -> Any: ...


Purged = Literal[
    "sign_in_states",
    "sessions",
    "provider_event_ids",
    "sign_in_events",
    "oauth_codes",
    "oauth_refresh_tokens",
    "oauth_token_families",
    "oauth_session_clients",
    "passkey_challenges",
]
"""The tables whose expired rows a purge deletes."""


# -- provider tokens ------------------------------------------------------------------------

PROVIDER_TOKEN_COLUMNS = "account_id, provider, subject, key_id, ciphertext, updated_at"  # noqa: S105


def stored_token(row: Row, read: ReadTime) -> StoredProviderToken:
    """A ``provider_tokens`` row read back in the order of :data:`PROVIDER_TOKEN_COLUMNS`."""
    return StoredProviderToken(
        account_id=row[0],
        identity=ProviderIdentity(row[1], row[2]),
        sealed=SealedToken(row[3], row[4]),
        updated_at=read(row[5]),
    )


# -- outboxes -------------------------------------------------------------------------------

LOGOUT_OUTBOX = "backchannel_logouts"
LOGOUT_COLUMNS = (
    "id",
    "client_id",
    "account_id",
    "session_id",
    "created_at",
    "next_attempt_at",
    "attempts",
)


def logout_values(pending: PendingLogout, write: WriteTime) -> tuple[object, ...]:
    """A back-channel logout's row, in the order of :data:`LOGOUT_COLUMNS`."""
    return (
        pending.id,
        pending.client_id,
        pending.account_id,
        pending.session_id,
        write(pending.created_at),
        write(pending.next_attempt_at),
        pending.attempts,
    )


def pending_logout(row: Row, read: ReadTime) -> PendingLogout:
    """A back-channel logout's row read back (:data:`LOGOUT_COLUMNS`)."""
    return PendingLogout(
        id=row[0],
        client_id=row[1],
        account_id=row[2],
        session_id=row[3],
        created_at=read(row[4]),
        next_attempt_at=read(row[5]),
        attempts=int(row[6]),
    )


REVOCATION_OUTBOX = "provider_token_revocations"
REVOCATION_COLUMNS = (
    "id",
    "account_id",
    "provider",
    "subject",
    "key_id",
    "ciphertext",
    "created_at",
    "next_attempt_at",
    "attempts",
)


def revocation_values(pending: PendingRevocation, write: WriteTime) -> tuple[object, ...]:
    """A provider token revocation's row, in the order of :data:`REVOCATION_COLUMNS`."""
    return (
        pending.id,
        pending.account_id,
        pending.identity.provider,
        pending.identity.subject,
        pending.sealed.key_id,
        pending.sealed.ciphertext,
        write(pending.created_at),
        write(pending.next_attempt_at),
        pending.attempts,
    )


def pending_revocation(row: Row, read: ReadTime) -> PendingRevocation:
    """A provider token revocation's row read back (:data:`REVOCATION_COLUMNS`)."""
    return PendingRevocation(
        id=row[0],
        account_id=row[1],
        identity=ProviderIdentity(row[2], row[3]),
        sealed=SealedToken(row[4], row[5]),
        created_at=read(row[6]),
        next_attempt_at=read(row[7]),
        attempts=int(row[8]),
    )
