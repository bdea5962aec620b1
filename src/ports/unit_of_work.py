"""A unit of work: the writes of one use case (a change, its audit event, the outbox rows it
owes) commit together or not at all."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from authgate.ports.accounts import AccountRepository
from authgate.ports.device_authorizations import DeviceAuthorizations
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
from authgate.ports.stored_clients import StoredClients


class Transaction(Protocol):
    """The repositories of one open transaction."""

    accounts: AccountRepository
    events: SignInEventLog
    sessions: SessionRecords
    # Provider events already acted on, in the transaction of what the event changes: a
    # failed change leaves the event to be delivered again.
    seen_events: SeenEvents
    provider_tokens: ProviderTokenStore
    revocations: RevocationOutbox
    authorization_codes: AuthorizationCodes
    refresh_tokens: RefreshTokens
    grants: Grants
    session_clients: SessionClients
    logout_outbox: LogoutOutbox
    passkeys: PasskeyStore
    device_authorizations: DeviceAuthorizations
    stored_clients: StoredClients


class UnitOfWork(Protocol):
    def begin(self) -> AbstractAsyncContextManager[Transaction]:
        """A transaction: committed when the block ends normally, rolled back when it raises
        (or is cancelled)."""

    def read(self) -> AbstractAsyncContextManager[Transaction]:
        """A read-only transaction: one consistent view that takes no write lock, so a check
        never waits behind a writer nor holds one up."""
