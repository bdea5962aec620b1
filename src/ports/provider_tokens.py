"""Provider tokens kept for revocation: sealed (encrypted) at rest per identity, moved into
the revocation outbox in the transaction that unlinks the identity or deletes the account, and
sent to the provider's revocation endpoint once that committed."""

from __future__ import annotations

import enum
from typing import Protocol

from authgate.domain.model import (
    PendingRevocation,
    ProviderIdentity,
    ProviderToken,
    SealedToken,
    StoredProviderToken,
)
from authgate.ports.outbox import Outbox


class TokenUnreadable(Exception):
    """A sealed token cannot be opened (its key is gone, or it was altered or moved to another
    identity). The text names the key id, never the token."""


class TokenSealer(Protocol):
    """Encrypts provider tokens at rest (authenticated encryption bound to the identity) under
    the first configured key, and opens them under any configured key."""

    @property
    def seal_key_id(self) -> str: ...

    def seal(self, token: ProviderToken, identity: ProviderIdentity) -> SealedToken: ...

    def open(self, sealed: SealedToken, identity: ProviderIdentity) -> ProviderToken:
        """Raises :class:`TokenUnreadable`."""


class ProviderTokenStore(Protocol):
    """Sealed tokens per (account, provider). Every method is atomic on its own."""

    async def put(self, stored: StoredProviderToken) -> None:
        """Keep the token, replacing any of the same account and provider."""

    async def take(self, account_id: str, provider: str | None = None) -> list[StoredProviderToken]:
        """Remove and return the account's tokens (only ``provider``'s when given)."""

    async def for_account(self, account_id: str) -> list[StoredProviderToken]:
        """The account's sealed tokens (for tests and the operator)."""

    async def sealed_under_other_keys(self, key_id: str, limit: int) -> list[StoredProviderToken]:
        """Up to ``limit`` tokens sealed under another key than ``key_id`` (re-encryption)."""

    async def replace_sealed(self, stored: StoredProviderToken, old_key_id: str) -> bool:
        """Store ``stored.sealed`` if the row is still sealed under ``old_key_id`` (a sign-in
        may have replaced it meanwhile); whether it was."""


class RevocationOutbox(Outbox[PendingRevocation], Protocol):
    """Pending revocations of provider tokens."""


class Revoked(enum.Enum):
    """How a provider answered a revocation that succeeded."""

    REVOKED = "revoked"
    ALREADY_INVALID = "already_invalid"  # the provider no longer knew the token


class RevocationFailed(Exception):
    """The provider did not confirm the revocation; the text (for the log and the audit
    trail) never holds the token."""


class TokenRevoker(Protocol):
    """A provider's revocation endpoint."""

    @property
    def name(self) -> str: ...

    async def revoke(self, token: ProviderToken) -> Revoked:
        """Raises :class:`RevocationFailed`."""
