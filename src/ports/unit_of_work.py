"""A unit of work: the writes of one use case commit together or not at all.

``async with uow.begin() as tx:`` gives repositories bound to one transaction; leaving the
block normally commits, an exception rolls every write of the block back: a change, its audit
event and the outbox rows it owes (provider-token revocations, back-channel logouts) are one
transaction.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from authgate.ports.accounts import AccountRepository
from authgate.ports.events import SignInEventLog
from authgate.ports.openid import (
    AuthorizationCodes,
    Grants,
    LogoutOutbox,
    RefreshTokens,
    SessionClients,
)
from authgate.ports.passkeys import PasskeyStore
from authgate.ports.provider_events import SeenEvents
from authgate.ports.provider_tokens import ProviderTokenStore, RevocationOutbox
from authgate.ports.session_records import SessionRecords


class Transaction(Protocol):
    """The repositories of one open transaction."""

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
    def provider_tokens(self) -> ProviderTokenStore: ...

    @property
    def revocations(self) -> RevocationOutbox:
        """The outbox of provider-token revocations, written with the change that drops a
        token and processed after it committed."""
        ...

    @property
    def authorization_codes(self) -> AuthorizationCodes: ...

    @property
    def refresh_tokens(self) -> RefreshTokens: ...

    @property
    def grants(self) -> Grants: ...

    @property
    def session_clients(self) -> SessionClients: ...

    @property
    def logout_outbox(self) -> LogoutOutbox:
        """The outbox of back-channel logouts, written with the change that ends a session
        and delivered after it committed."""
        ...

    @property
    def passkeys(self) -> PasskeyStore:
        """The accounts' passkeys: added, used and removed with their audit event."""
        ...


class UnitOfWork(Protocol):
    def begin(self) -> AbstractAsyncContextManager[Transaction]:
        """Open a transaction: committed when the block ends normally, rolled back when it
        raises (or is cancelled)."""
        ...

    def read(self) -> AbstractAsyncContextManager[Transaction]:
        """Open a transaction that only reads: one consistent view that takes no write lock,
        so a check never waits behind a writer nor holds one up (SQLite refuses writes)."""
        ...
