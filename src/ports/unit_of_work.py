"""A unit of work: the writes of one use case commit together or not at all.

``async with uow.begin() as tx:`` gives repositories bound to one transaction; leaving the
block normally commits, an exception rolls every write of the block back. The sign-in
callback writes the account or identity, the last sign-in time and the audit event through
one transaction, with the session record and the sealed provider token; unlinking and
deleting write the revocation outbox row in the transaction of the change.
"""

from __future__ import annotations

import datetime as dt
from contextlib import AbstractAsyncContextManager
from typing import Protocol

import attrs

from authgate.domain.model import (
    Account,
    LinkedIdentity,
    ProviderIdentity,
    SessionRecord,
    SignInEvent,
    StoredProviderToken,
)
from authgate.ports.accounts import AccountRepository
from authgate.ports.events import SignInEventLog
from authgate.ports.provider_events import SeenEvents
from authgate.ports.provider_tokens import ProviderTokenStore, RevocationOutbox
from authgate.ports.session_records import SessionRecords


@attrs.frozen
class HolderWrites:
    """What a login writes for the account holding its identity, before it knows which: the
    session's record, the audit event and the sealed provider token to keep (or None), each
    with an ``account_id`` that :meth:`Transaction.sign_in_to_holder` replaces."""

    session: SessionRecord
    event: SignInEvent
    token: StoredProviderToken | None = None


class Transaction(Protocol):
    """The repositories of one open transaction."""

    async def sign_in_to_holder(
        self, identity: ProviderIdentity, now: dt.datetime, writes: HolderWrites
    ) -> tuple[LinkedIdentity, Account] | None:
        """A login's reads and writes together: the identity and its account
        (:meth:`~AccountRepository.find_with_identity`) and, only when an account holds the
        identity and it is not disabled, the account's last sign-in (``now``) and ``writes``
        for that account. Returns what the look-up found, the account as it was before; None
        (nobody holds it) or a disabled identity wrote nothing. It is the unit's last write:
        on PostgreSQL, as the unit's first, it is one statement that commits by itself, and
        the unit refuses any statement after it."""
        ...

    @property
    def accounts(self) -> AccountRepository: ...

    @property
    def events(self) -> SignInEventLog: ...

    @property
    def sessions(self) -> SessionRecords: ...

    @property
    def seen_events(self) -> SeenEvents:
        """Provider events already acted on (one-time ``jti``), in the same transaction as
        what the event changes: a failed change leaves the event to be delivered again."""
        ...

    @property
    def provider_tokens(self) -> ProviderTokenStore:
        """Sealed provider tokens, per account and provider."""
        ...

    @property
    def revocations(self) -> RevocationOutbox:
        """The outbox of provider-token revocations, written with the change that drops a
        token and processed after it committed."""
        ...


class UnitOfWork(Protocol):
    def begin(self) -> AbstractAsyncContextManager[Transaction]:
        """Open a transaction: committed when the block ends normally, rolled back when it
        raises (or is cancelled)."""
        ...
