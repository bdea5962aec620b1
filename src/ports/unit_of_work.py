"""A unit of work: the writes of one use case (a change, its audit event, the outbox rows it
owes) commit together or not at all."""

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
        """Provider events already acted on, in the transaction of what the event changes: a
        failed change leaves the event to be delivered again."""

    @property
    def provider_tokens(self) -> ProviderTokenStore: ...

    @property
    def revocations(self) -> RevocationOutbox: ...

    @property
    def authorization_codes(self) -> AuthorizationCodes: ...

    @property
    def refresh_tokens(self) -> RefreshTokens: ...

    @property
    def grants(self) -> Grants: ...

    @property
    def session_clients(self) -> SessionClients: ...

    @property
    def logout_outbox(self) -> LogoutOutbox: ...

    @property
    def passkeys(self) -> PasskeyStore: ...


class UnitOfWork(Protocol):
    def begin(self) -> AbstractAsyncContextManager[Transaction]:
        """A transaction: committed when the block ends normally, rolled back when it raises
        (or is cancelled)."""

    def read(self) -> AbstractAsyncContextManager[Transaction]:
        """A read-only transaction: one consistent view that takes no write lock, so a check
        never waits behind a writer nor holds one up."""
