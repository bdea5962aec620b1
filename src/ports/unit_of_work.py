"""A unit of work: the writes of one use case commit together or not at all.

``async with uow.begin() as tx:`` gives repositories bound to one transaction; leaving the
block normally commits, an exception rolls every write of the block back. The sign-in
callback writes the account or identity, the last sign-in time and the audit event through
one transaction, with the session record and the sealed provider token; unlinking and
deleting write the revocation outbox row in the transaction of the change; a token response
redeems its code, starts its token family and records who got it in one; ending a session
revokes its token families and writes the back-channel logouts it owes in the same transaction.
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
    def provider_tokens(self) -> ProviderTokenStore:
        """Sealed provider tokens, per account and provider."""
        ...

    @property
    def revocations(self) -> RevocationOutbox:
        """The outbox of provider-token revocations, written with the change that drops a
        token and processed after it committed."""
        ...

    @property
    def authorization_codes(self) -> AuthorizationCodes:
        """The codes issued to clients (authgate as an OpenID Provider)."""
        ...

    @property
    def refresh_tokens(self) -> RefreshTokens:
        """The token families and refresh tokens issued to clients."""
        ...

    @property
    def grants(self) -> Grants:
        """The consents people gave to clients."""
        ...

    @property
    def session_clients(self) -> SessionClients:
        """Which clients received tokens in which session (back-channel logout)."""
        ...

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
        """Open a transaction that only reads (whether a token is still active): one
        consistent view of the stores that takes no write lock, so that a check never waits
        behind a writer nor holds one up. Writing through it is an error where the store can
        tell (SQLite refuses it); where reads take no lock anyway it is :meth:`begin`."""
        ...
