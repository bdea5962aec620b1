"""Provider tokens kept for revocation: sealed (encrypted) at rest, revoked through an outbox.

A provider's token (Apple's refresh token, Google's refresh or access token, any RFC 7009
provider's) is kept sealed per identity; unlinking the identity or deleting the account moves
it, still sealed, into the revocation outbox in the same transaction; a background worker
sends it to the provider's revocation endpoint after the change committed.
"""

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
    """A sealed token cannot be opened: its key is no longer configured, or it was altered or
    moved to another identity. The text names the key id, never the token."""


class TokenSealer(Protocol):
    """Encrypts provider tokens at rest (authenticated encryption bound to the identity)."""

    @property
    def seal_key_id(self) -> str:
        """The id of the key that seals (the first configured)."""
        ...

    def seal(self, token: ProviderToken, identity: ProviderIdentity) -> SealedToken:
        """Encrypt under the current (first) key."""
        ...

    def open(self, sealed: SealedToken, identity: ProviderIdentity) -> ProviderToken:
        """Decrypt under the key ``sealed.key_id`` names (any configured key); raises
        :class:`TokenUnreadable`."""
        ...


class ProviderTokenStore(Protocol):
    """Sealed tokens per (account, provider). Every method is atomic on its own."""

    async def put(self, stored: StoredProviderToken) -> None:
        """Keep the token of the account's identity at that provider, replacing any kept
        before for the same account and provider."""
        ...

    async def take(self, account_id: str, provider: str | None = None) -> list[StoredProviderToken]:
        """Remove and return the account's tokens (only ``provider``'s when given)."""
        ...

    async def for_account(self, account_id: str) -> list[StoredProviderToken]:
        """The account's sealed tokens (for tests and the operator; never shown to users)."""
        ...

    async def sealed_under_other_keys(self, key_id: str, limit: int) -> list[StoredProviderToken]:
        """Up to ``limit`` tokens sealed under another key than ``key_id`` (re-encryption)."""
        ...

    async def replace_sealed(self, stored: StoredProviderToken, old_key_id: str) -> bool:
        """Store ``stored.sealed`` for its account and provider if the row is still sealed
        under ``old_key_id`` (a sign-in may have replaced it meanwhile); whether it was."""
        ...


class RevocationOutbox(Outbox[PendingRevocation], Protocol):
    """Pending revocations of provider tokens."""


class Revoked(enum.Enum):
    """How a provider answered a revocation that succeeded."""

    REVOKED = "revoked"
    ALREADY_INVALID = "already_invalid"  # the provider no longer knew the token


class RevocationFailed(Exception):
    """The provider did not confirm the revocation; the text (status and OAuth error code, for
    the log and the audit trail) never holds the token."""


class TokenRevoker(Protocol):
    """A provider's revocation endpoint."""

    @property
    def name(self) -> str: ...

    async def revoke(self, token: ProviderToken) -> Revoked:
        """Send ``token`` to the provider's revocation endpoint with the client's
        authentication as the provider wants it; raises :class:`RevocationFailed`."""
        ...
