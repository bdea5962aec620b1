"""Provider tokens and the revocation outbox in memory (tests, and a single instance)."""

from __future__ import annotations

import attrs

from authgate.domain.model import PendingRevocation, StoredProviderToken

from .journal import OneTable
from .outbox import MemoryOutbox


class MemoryProviderTokens(OneTable[tuple[str, str], StoredProviderToken]):
    """:class:`~authgate.ports.provider_tokens.ProviderTokenStore` in a dict."""

    async def put(self, stored: StoredProviderToken) -> None:
        self._rows[(stored.account_id, stored.identity.provider)] = stored

    async def take(self, account_id: str, provider: str | None = None) -> list[StoredProviderToken]:
        keys = [
            k for k in self._rows if k[0] == account_id and (provider is None or k[1] == provider)
        ]
        taken = [self._rows[k] for k in sorted(keys)]
        self._rows.delete_where(keys)
        return taken

    async def for_account(self, account_id: str) -> list[StoredProviderToken]:
        return [t for k, t in sorted(self._rows.items()) if k[0] == account_id]

    async def sealed_under_other_keys(self, key_id: str, limit: int) -> list[StoredProviderToken]:
        found = [t for _, t in sorted(self._rows.items()) if t.sealed.key_id != key_id]
        return found[:limit]

    async def replace_sealed(self, stored: StoredProviderToken, old_key_id: str) -> bool:
        key = (stored.account_id, stored.identity.provider)
        current = self._rows.get(key)
        if current is None or current.sealed.key_id != old_key_id:
            return False
        self._rows[key] = attrs.evolve(current, sealed=stored.sealed)
        return True


class MemoryRevocationOutbox(MemoryOutbox[PendingRevocation]):
    """:class:`~authgate.ports.provider_tokens.RevocationOutbox` in a dict."""
